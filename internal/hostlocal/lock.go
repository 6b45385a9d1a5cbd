package hostlocal

import (
	"os"
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
//
// flock(2) needs only a read handle, so a lock file anyone can open is a
// lock anyone can hold: it is created 0600, and one left with another
// mode (by host-local, which creates it 0644, or an older version) is
// made 0600 here, on the descriptor that was checked.
func acquireLock(dir string, uid int, timeout time.Duration) (*Lock, error) {
	return lockFile(child(dir, lockName), syscall.O_CREAT, uid, timeout, func() error {
		return cnierr.New(cnierr.CodeTryAgainLater, "state directory is locked", "dir=%s timeout=%s", dir, timeout)
	})
}

// lockFile is acquireLock of the lock file at path, opened with flags
// (O_CREAT or none); busy is the error of a wait that timed out, at once
// when timeout is not positive.
func lockFile(path string, flags int, uid int, timeout time.Duration, busy func() error) (*Lock, error) {
	fd, err := openatRetry(atFDCWD, path, syscall.O_RDONLY|flags, modePrivate)
	if err != nil {
		return nil, cnierr.IO("open", path, err)
	}
	if err := ownLock(fd, path, uid); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	f := &Lock{fd: fd, path: path}
	// The uncontended case, which is nearly every call, needs no goroutine.
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == syscall.EWOULDBLOCK && timeout > 0 {
		got := make(chan error, 1)
		go func() {
			var err error = syscall.EINTR
			for err == syscall.EINTR {
				err = syscall.Flock(fd, syscall.LOCK_EX)
			}
			got <- err
		}()
		select {
		case err = <-got:
		case <-time.After(timeout): // an unstopped timer is collected since Go 1.23
			go func() {
				<-got
				f.Close()
			}()
			return nil, busy()
		}
	}
	if err == nil {
		return f, nil
	}
	f.Close()
	if err == syscall.EWOULDBLOCK {
		return nil, busy()
	}
	return nil, cnierr.IO("lock", path, err)
}

// Lock is a held flock: its descriptor, which Close releases. It is no
// *os.File because os.NewFile asks the kernel whether the descriptor
// blocks, one more system call per lock on every operation, for a poller
// a lock never uses.
type Lock struct {
	fd   int
	path string
}

// Close releases the lock.
func (l *Lock) Close() error {
	if err := syscall.Close(l.fd); err != nil {
		return cnierr.IO("unlock", l.path, &os.PathError{Op: "close", Path: l.path, Err: err})
	}
	return nil
}

// ownLock makes the lock file fd the user's alone: a regular file owned
// by uid, mode 0600.
func ownLock(fd int, path string, uid int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return cnierr.IO("stat", path, err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return unsafeDir(path, "is not a regular file", uid)
	case !trustedOwner(st.Uid, uid):
		return unsafeDir(path, "is owned by another user", uid)
	case st.Mode&0o777 != modePrivate:
		if err := syscall.Fchmod(fd, modePrivate); err != nil {
			return cnierr.IO("chmod", path, err)
		}
	}
	return nil
}
