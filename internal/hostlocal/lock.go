package hostlocal

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// lockName is host-local's lock file; taking the same BSD flock on it is
// what lets both binaries share a directory.
const lockName = "lock"

// acquireLock opens (creating if needed) dir's lock file and takes an
// exclusive flock on it within timeout. Closing the returned file releases
// the lock.
//
// The wait is a blocking flock, so the kernel hands the lock over the
// moment it is released, in arrival order; polling with LOCK_NB instead
// leaves the lock idle between polls, which under a burst of ADDs costs
// more than the work itself. A blocking flock cannot be given a deadline,
// so it runs in its own goroutine: on timeout the caller gets code 11 at
// once, and the abandoned waiter drops the lock as soon as it gets it (or
// dies with the process, which is what happens after an exec'd ADD).
func acquireLock(dir string, timeout time.Duration) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_CREAT, 0o644)
	if err != nil {
		return nil, cnierr.IO("open", path, err)
	}
	// A blocking descriptor wrapped by NewFile stays out of the poller.
	f := os.NewFile(uintptr(fd), path)
	// The uncontended case, which is nearly every call, needs no goroutine.
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		return f, nil
	} else if err != syscall.EWOULDBLOCK {
		f.Close()
		return nil, cnierr.IO("lock", path, err)
	}
	got := make(chan error, 1)
	go func() { got <- flockRetryingEINTR(fd) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, cnierr.IO("lock", path, err)
		}
		return f, nil
	case <-timer.C:
		go func() {
			<-got
			f.Close()
		}()
		return nil, cnierr.New(cnierr.CodeTryAgainLater, "state directory is locked",
			"dir=%s timeout=%s", dir, timeout)
	}
}

func flockRetryingEINTR(fd int) error {
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
