package hostlocal

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// lockName is host-local's lock file; taking the same BSD flock on it is
// what lets both binaries share a directory.
const lockName = "lock"

// Polling bounds for the non-blocking flock. A blocking flock cannot be
// given a deadline, and a CNI call must not hang forever behind a wedged
// holder, so we poll with a short exponential backoff instead.
const (
	lockPollMin = time.Millisecond
	lockPollMax = 10 * time.Millisecond
)

// acquireLock opens (creating if needed) dir's lock file and takes an
// exclusive flock on it within timeout. Closing the returned file releases
// the lock.
func acquireLock(dir string, timeout time.Duration) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, cnierr.IO("open", path, err)
	}
	deadline := time.Now().Add(timeout)
	wait := lockPollMin
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, cnierr.IO("lock", path, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			f.Close()
			return nil, cnierr.New(cnierr.CodeTryAgainLater, "state directory is locked",
				"dir=%s timeout=%s", dir, timeout)
		}
		time.Sleep(min(wait, left))
		wait = min(2*wait, lockPollMax)
	}
}
