package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// Every example parses as libcni parses it, explains itself, and names
// only plugins that exist: ours in the installed bin dir, the others in
// Debian's upstream plugin dir. Needs no root.
func TestExamplesParseAndNameInstalledPlugins(t *testing.T) {
	dir := filepath.Join(testkit.RepoRoot(), "examples")
	files, err := filepath.Glob(filepath.Join(dir, "*.conflist"))
	if err != nil || len(files) < 5 {
		t.Fatalf("examples/*.conflist: %v %v, want the five documented examples", files, err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			list, err := libcni.ConfListFromFile(f)
			if err != nil {
				t.Fatalf("libcni: %v", err)
			}
			if list.Name == "" || list.CNIVersion == "" || len(list.Plugins) == 0 {
				t.Fatalf("name %q, cniVersion %q, %d plugins", list.Name, list.CNIVersion, len(list.Plugins))
			}
			var top struct {
				Comment string `json:"_comment"`
			}
			if err := json.Unmarshal(list.Bytes, &top); err != nil || len(top.Comment) < 40 {
				t.Errorf("no explanatory top-level _comment (%v)", err)
			}
			if !strings.Contains(string(readme), filepath.Base(f)) {
				t.Errorf("examples/README.md does not describe %s", filepath.Base(f))
			}
			for i, p := range list.Plugins {
				names := []string{p.Network.Type}
				var conf struct {
					IPAM struct {
						Type      string   `json:"type"`
						Delegates []string `json:"delegates"`
					} `json:"ipam"`
				}
				if err := json.Unmarshal(p.Bytes, &conf); err != nil {
					t.Fatalf("plugins[%d]: %v", i, err)
				}
				if conf.IPAM.Type != "" {
					names = append(names, conf.IPAM.Type)
				}
				names = append(names, conf.IPAM.Delegates...)
				for _, name := range names {
					where, ok := findPlugin(name)
					if !ok {
						t.Errorf("plugins[%d] names %q, found neither in the installed bin dir %s nor in %s", i, name, installDir, upstreamDir)
					}
					if where == installDir {
						ours[name] = true
					}
				}
			}
		})
	}
	for _, name := range []string{"ipam-delegated", "ipam-ds-static", "ipam-da-pools"} {
		if !ours[name] {
			t.Errorf("no example uses %s from the installed bin dir", name)
		}
	}

	// The two networks sharing a pool define it identically.
	var a, b map[string]any
	for f, dst := range map[string]*map[string]any{"shared-pool-a.conflist": &a, "shared-pool-b.conflist": &b} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			t.Fatal(err)
		}
	}
	defs := func(c map[string]any) any { return ipamOf(t, c)["poolDefinitions"] }
	if defs(a) == nil || !reflect.DeepEqual(defs(a), defs(b)) {
		t.Errorf("shared-pool-a and -b define the pool differently: %v vs %v", defs(a), defs(b))
	}
}

// findPlugin looks name up the way libcni does, in binDirs order.
func findPlugin(name string) (string, bool) {
	for _, dir := range binDirs {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return dir, true
		}
	}
	return "", false
}
