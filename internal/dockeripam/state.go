package dockeripam

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/install"
)

// stateDirName holds the driver's own state beside the CNI state
// directories; names starting with '_' never collide with a network or a
// pool.
const stateDirName = "_docker"

// maxStateSize bounds what is read of state.json: a few hundred bytes per
// pool Docker holds.
const maxStateSize = 16 << 20

// stateVersion is the format of state.json; a file of another version is
// refused rather than misread.
const stateVersion = 1

// state is what the driver must remember across restarts of itself and of
// dockerd (which replays nothing): the pools Docker holds. Addresses need
// no entry: their reservation files in the pool directory are the record.
type state struct {
	Version int                   `json:"version"`
	Pools   map[string]*poolState `json:"pools"` // by PoolID
}

// poolState is one Docker pool: a pool directory (defined or the
// driver's own), the subnet Docker sees, and an optional SubPool.
type poolState struct {
	Pool    string `json:"pool"`   // the directory under _pools
	Subnet  string `json:"subnet"` // the CIDR Docker was given
	SubPool string `json:"subPool,omitempty"`
	// Own: the driver created the pool (no definition); its range set is
	// the whole subnet.
	Own  bool `json:"own"`
	Refs int  `json:"refs"`
	// Gateways are gateway addresses handed to Docker that need no
	// reservation file because no allocator hands them out anyway (a
	// range's gateway), one entry per request.
	Gateways []string `json:"gateways,omitempty"`
}

// stateStore is the state directory, locked for the driver's lifetime so
// that two drivers can never share (and corrupt) one state.
type stateStore struct {
	dir  string
	lock *os.File
}

func openStateStore(dataDir string) (*stateStore, *state, error) {
	dir := filepath.Join(dataDir, stateDirName)
	// dataDir as ipam-da-pools creates it; the driver's own directory
	// readable by root alone. Both only the driver's user may change
	// (hostlocal.SafeDir), and nothing below them is opened through a
	// symbolic link.
	uid := os.Geteuid()
	if err := hostlocal.EnsureDir(dataDir, 0o755, uid); err != nil {
		return nil, nil, fmt.Errorf("data directory: %w", err)
	}
	if err := hostlocal.EnsureDir(dir, 0o700, uid); err != nil {
		return nil, nil, fmt.Errorf("state directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("state lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil, fmt.Errorf("state directory %s is in use by another docker-ipam driver", dir)
		}
		return nil, nil, fmt.Errorf("state lock: %w", err)
	}
	s := &stateStore{dir: dir, lock: lock}
	st, err := s.load()
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, st, nil
}

func (s *stateStore) path() string { return filepath.Join(s.dir, "state.json") }

func (s *stateStore) load() (*state, error) {
	b, err := install.ReadRegular(s.path(), maxStateSize)
	if errors.Is(err, fs.ErrNotExist) {
		return &state{Version: stateVersion, Pools: map[string]*poolState{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("state file %s is corrupt: %w", s.path(), err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("state file %s has version %d, this driver reads %d", s.path(), st.Version, stateVersion)
	}
	if st.Pools == nil {
		st.Pools = map[string]*poolState{}
	}
	return &st, nil
}

// save replaces state.json atomically: a crash leaves the old or the new
// state, never a torn one.
func (s *stateStore) save(st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path() + ".tmp"
	if err := writeNoFollow(tmp, append(b, '\n')); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp, s.path()); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

func (s *stateStore) close() error { return s.lock.Close() }

// writeNoFollow is os.WriteFile (mode 0600) of a file that is not a
// symbolic link: one planted at path fails the write (ELOOP) rather than
// redirect it.
func writeNoFollow(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
