package dapools

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

const (
	// DefaultDataDir is host-local's.
	DefaultDataDir = "/var/lib/cni/networks"
	// DefaultLockTimeout bounds the wait for a state directory's lock.
	DefaultLockTimeout = 10 * time.Second
	// maxLockTimeout keeps a typo from hanging a runtime for hours.
	maxLockTimeout = 5 * time.Minute
	// poolsDir holds one state directory per pool, beside the networks'.
	// Network names cannot start with '_', so it never collides with one.
	poolsDir = "_pools"
)

// config is ipam-da-pools' store for one request: the engine's config,
// the request's attachment (alloc.Config.Attachment) and where the state
// directories are.
type config struct {
	*alloc.Config
	req *plugin.Request
	att alloc.Attachment
	Place
}

// OwnKeys reads what the ipam section says beside the engine's keys
// (where the state directories are, how long to wait for their locks),
// validated before anything touches the disk: the personality's, and
// the operators' commands' reading of where a network's state is.
func OwnKeys(conf *netconf.Envelope) (dir string, timeout time.Duration, err error) {
	var ipam struct {
		DataDir     string `json:"dataDir"`
		LockTimeout string `json:"lockTimeout"`
	}
	if err = conf.DecodeIPAM(&ipam); err != nil {
		return "", 0, err
	}
	if dir, err = dataDir(ipam.DataDir); err != nil {
		return "", 0, err
	}
	timeout, err = lockTimeout(ipam.LockTimeout)
	return dir, timeout, err
}

// dataDir validates ipam.dataDir before anything touches the disk. A
// dataDir that exists must be a real directory: a file would only fail
// later as an I/O error (code 5) when it is a mistake in the config, and a
// symbolic link would let whoever controls it redirect every state
// directory (and the removals GC makes there) to another place, a change
// the flock and the index stamps cannot notice. Nor may anyone but the
// user the plugin runs as be able to change it (hostlocal.SafeDir). A
// missing dataDir is
// created on first use, as host-local does.
func dataDir(dir string) (string, error) {
	if dir == "" {
		dir = DefaultDataDir
	}
	if !filepath.IsAbs(dir) {
		return "", cnierr.InvalidConfig("ipam.dataDir", dir, "must be an absolute path")
	}
	dir = filepath.Clean(dir)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dir, nil
	case errors.Is(err, syscall.ENOTDIR):
		return "", cnierr.InvalidConfig("ipam.dataDir", dir, "a parent of it is not a directory")
	case err != nil:
		return "", cnierr.IO("stat", dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", cnierr.InvalidConfig("ipam.dataDir", dir, "is a symbolic link; name the directory it points to")
	case !fi.IsDir():
		return "", cnierr.InvalidConfig("ipam.dataDir", dir, "is not a directory")
	}
	// Someone else able to change it could plant what root then follows.
	return dir, hostlocal.SafeDir(dir, fi, os.Geteuid())
}

func lockTimeout(s string) (time.Duration, error) {
	if s == "" {
		return DefaultLockTimeout, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxLockTimeout {
		return 0, cnierr.InvalidConfig("ipam.lockTimeout", s, "must be a duration between 1ms and 5m, like \"10s\"")
	}
	return d, nil
}
