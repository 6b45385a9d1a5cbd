package dapools

import (
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// Where the state directories are under a data dir (docs/state-on-disk.md):
// the operators' commands read the same layout.

// ScopeDir is the state directory of scope s under dataDir: host-local's
// for the network, or the pool's, shared by every network that selects it
// so that no two of them can hold one address.
func ScopeDir(dataDir string, s alloc.Scope) string {
	if s.Pool != "" {
		return filepath.Join(dataDir, poolsDir, s.Pool)
	}
	return filepath.Join(dataDir, s.Network)
}

// PoolsDir is the directory holding every pool's state directory.
func PoolsDir(dataDir string) string { return filepath.Join(dataDir, poolsDir) }
