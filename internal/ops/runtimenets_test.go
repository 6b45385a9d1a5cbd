package ops

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRuntimeNetworks: the networks a CRI runtime loads from its conf dir,
// as containerd's go-cni loads them: sorted by file name, the first max
// (0: all), a file among them that does not parse is an error, and one
// past them is never read.
func TestRuntimeNetworks(t *testing.T) {
	conflist := func(name string) string {
		return `{"cniVersion": "1.0.0", "name": "` + name + `", "plugins": [{"type": "bridge"}]}`
	}
	dir := t.TempDir()
	for file, body := range map[string]string{
		"20-second.conflist": conflist("second"),
		"10-first.conflist":  conflist("first"),
		"30-single.conf":     `{"cniVersion": "1.0.0", "name": "single", "type": "bridge"}`,
		"40-broken.json":     `{"name": `,
		"README.md":          "not a configuration",
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		max     int
		want    []string
		wantErr string
	}{
		{max: 1, want: []string{"first"}},
		{max: 3, want: []string{"first", "second", "single"}},
		{max: 4, wantErr: "40-broken.json"},
		{max: 0, wantErr: "40-broken.json"},
		{max: -1, wantErr: "invalid max -1"},
	} {
		got, err := RuntimeNetworks(dir, tc.max)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("max %d: %v, %v; want an error naming %q", tc.max, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("max %d: %v, %v; want %v", tc.max, got, err, tc.want)
		}
	}
	// A .conf holding a conflist has no type: containerd refuses it.
	typeless := t.TempDir()
	if err := os.WriteFile(filepath.Join(typeless, "10-list.conf"), []byte(conflist("list")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := RuntimeNetworks(typeless, 1); err == nil || !strings.Contains(err.Error(), "10-list.conf") {
		t.Errorf("a conflist saved as .conf: %v, %v; want refused", got, err)
	}
	if got, err := RuntimeNetworks(filepath.Join(dir, "missing"), 1); err == nil || !strings.Contains(err.Error(), "no network configuration") {
		t.Errorf("a missing dir: %v, %v; want refused", got, err)
	}
}
