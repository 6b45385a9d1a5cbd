package ops

import (
	"errors"
	"fmt"
	"os"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// StateDir is one state directory under a data dir: a network's or a
// pool's.
type StateDir struct {
	alloc.Scope
	Path string
}

// Label names d in output: the network's name, or "pool/<name>".
func (d StateDir) Label() string {
	if d.Pool != "" {
		return "pool/" + d.Pool
	}
	return d.Network
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
		out = append(out, stateDirOf(dataDir, alloc.Scope{Network: n}))
	}
	for _, p := range pools {
		out = append(out, stateDirOf(dataDir, alloc.Scope{Pool: p}))
	}
	return out, nil
}

func stateDirOf(dataDir string, s alloc.Scope) StateDir {
	return StateDir{Scope: s, Path: scopeDir(dataDir, "", s)}
}

func subdirs(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	return hostlocal.StateDirNames(des), err
}
