package ops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
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
// directories under its _pools (hostlocal.StateDirNames), sorted by kind
// then name. A data dir that does not exist is an error: an operator's
// typo must not read as a node with nothing reserved.
func StateDirs(dataDir string) ([]StateDir, error) {
	nets, err := subdirs(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("data dir %s does not exist", dataDir)
	}
	if err != nil {
		return nil, err
	}
	pools, err := subdirs(dapools.PoolsDir(dataDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []StateDir
	for _, n := range nets {
		out = append(out, stateDirOf(dataDir, Location{Network: n}))
	}
	for _, p := range pools {
		out = append(out, stateDirOf(dataDir, Location{Pool: p}))
	}
	return out, nil
}

// stateDirOf is t's state directory under dataDir: the pool's when Pool
// is set, else the network's.
func stateDirOf(dataDir string, t Location) StateDir {
	if t.Pool != "" {
		return StateDir{Kind: "pool", Name: t.Pool, Path: dapools.PoolDir(dataDir, t.Pool)}
	}
	return StateDir{Kind: "network", Name: t.Network, Path: filepath.Join(dataDir, t.Network)}
}

func subdirs(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	return hostlocal.StateDirNames(des), err
}
