package ops

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/dapools"
)

// StateDir is one state directory under a data dir.
type StateDir struct {
	Kind string // "network" or "pool"
	Name string
	Path string
}

// Label names d in output: the network's name, or "pool/<name>".
func (d StateDir) Label() string {
	if d.Kind == "pool" {
		return "pool/" + d.Name
	}
	return d.Name
}

// StateDirs lists the network directories of dataDir and the pool
// directories under its _pools, sorted by kind then name. Names starting
// with '_' or '.' are the engine's own (indexes, scratch) and skipped.
func StateDirs(dataDir string) ([]StateDir, error) {
	nets, err := subdirs(dataDir)
	if err != nil {
		return nil, err
	}
	pools, err := subdirs(dapools.PoolsDir(dataDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []StateDir
	for _, n := range nets {
		out = append(out, StateDir{Kind: "network", Name: n, Path: filepath.Join(dataDir, n)})
	}
	for _, p := range pools {
		out = append(out, StateDir{Kind: "pool", Name: p, Path: dapools.PoolDir(dataDir, p)})
	}
	return out, nil
}

func subdirs(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		if de.IsDir() && !strings.HasPrefix(de.Name(), "_") && !strings.HasPrefix(de.Name(), ".") {
			out = append(out, de.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}
