package dapools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

func mustConfig(t *testing.T, conf string) error {
	t.Helper()
	env, err := netconf.Parse([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	return Personality(nil).Validate(env)
}

func TestLockTimeout(t *testing.T) {
	for _, tt := range []struct {
		s    string
		code uint
	}{{"", 0}, {"2s", 0}, {"forever", 7}, {"0s", 7}, {"6m", 7}} {
		err := mustConfig(t, fmt.Sprintf(`{"cniVersion":"1.0.0","name":"n","ipam":{"dataDir":"/d","lockTimeout":%q,"subnet":"10.0.0.0/24"}}`, tt.s))
		if e := cnierr.As(err); cnierr.Code(err) != tt.code || (err != nil && !strings.Contains(e.Msg+e.Details, "ipam.lockTimeout")) {
			t.Errorf("lockTimeout %q: error = %v, want code %d naming ipam.lockTimeout", tt.s, err, tt.code)
		}
	}
}

// ipam.dataDir is checked with Lstat before anything touches the disk:
// a file or a symbolic link is a config error naming the field.
func TestDataDirValidated(t *testing.T) {
	sandbox := t.TempDir()
	dir := filepath.Join(sandbox, "dir")
	file := filepath.Join(sandbox, "file")
	link := filepath.Join(sandbox, "link")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dataDir string
		code    uint
	}{
		{dataDir: dir},
		{dataDir: dir + "/"},
		{dataDir: filepath.Join(sandbox, "missing", "created-later")},
		{dataDir: "relative/dir", code: 7},
		{dataDir: file, code: 7},
		{dataDir: filepath.Join(file, "below-a-file"), code: 7},
		{dataDir: link, code: 7},
		{dataDir: link + "/", code: 7},
	} {
		t.Run(tt.dataDir, func(t *testing.T) {
			err := mustConfig(t, fmt.Sprintf(`{"cniVersion":"1.0.0","name":"n","ipam":{"dataDir":%q,"subnet":"10.0.0.0/24"}}`, tt.dataDir))
			if e := cnierr.As(err); cnierr.Code(err) != tt.code || (err != nil && !strings.Contains(e.Msg+e.Details, "ipam.dataDir")) {
				t.Errorf("error = %v, want code %d naming ipam.dataDir", err, tt.code)
			}
		})
	}
	if des, _ := os.ReadDir(sandbox); len(des) != 3 {
		t.Errorf("validation touched the disk: %v", des)
	}
}
