package hostlocal

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Every directory from the data directory down is checked, once per open,
// to be a real directory (Lstat'ed) owned by the plugin's user and
// writable by nobody else, and files below it are opened with O_NOFOLLOW
// (openatRetry): "Files, ownership and modes" in docs/security.md says why
// nothing planted below the data directory can then redirect a read or a
// write.

// Modes of what this package creates: directories and files that only the
// plugin reads are its own (0700, 0600); reservations and cursors keep
// host-local's 0644 inside host-local's 0755 state directory.
const (
	modeStateDir   = 0o755 // D, and the data directory and _pools above it
	modePrivateDir = 0o700 // _index, an index directory, _sticky
	modeShared     = 0o644 // reservations, cursors (host-local's)
	modePrivate    = 0o600 // lock, index buckets, stamp
)

// unsafeDir is code 7: a directory (or the lock file) that someone other
// than uid, the user the plugin runs as, could change, or a symbolic link,
// refused before anything is read or written below it. (A file where a
// directory belongs is code 5, as any ENOTDIR.)
func unsafeDir(path, reason string, uid int) error {
	return cnierr.New(cnierr.CodeInvalidConfig, "state directory not safe to use",
		"%s %s: the data directory (ipam.dataDir) and every directory below it must be real directories owned by uid %d, the user this plugin runs as, or by root, and writable by no one else",
		path, reason, uid)
}

// SafeDir judges fi, the Lstat (or Fstat) of directory path, for uid:
// code 7 unless a real directory owned by uid (or root, who is trusted
// anyway: a rootless plugin or an operator's read view may read root's
// state) that no one else may write.
func SafeDir(path string, fi fs.FileInfo, uid int) error {
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return unsafeDir(path, "is a symbolic link", uid)
	case !fi.IsDir():
		return cnierr.IO("open", path, syscall.ENOTDIR) // a mistake, not an attack
	case st == nil || !trustedOwner(st.Uid, uid):
		return unsafeDir(path, "is owned by another user", uid)
	case fi.Mode().Perm()&0o022 != 0:
		return unsafeDir(path, "is writable by group or others (mode "+fi.Mode().Perm().String()+")", uid)
	}
	return nil
}

// checkDir checks that the existing directory path is safe for uid (see
// SafeDir) and returns its status: every reader of a directory judges it
// here, so a hostile one gets one code whoever looks. A missing one is
// code 5 that errors.Is fs.ErrNotExist.
func checkDir(path string, uid int) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, cnierr.IO("stat", path, err)
	}
	return fi, SafeDir(path, fi, uid)
}

// EnsureDir creates path with mode when it is missing (its parents too,
// 0755, as host-local creates its directories), then checks it for uid.
func EnsureDir(path string, mode os.FileMode, uid int) error {
	if _, err := checkDir(path, uid); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), modeStateDir); err != nil {
		return cnierr.IO("create", filepath.Dir(path), err)
	}
	if err := os.Mkdir(path, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return cnierr.IO("create", path, err)
	}
	_, err := checkDir(path, uid)
	return err
}

// dirSpec is a directory EnsureDir makes with mode.
type dirSpec struct {
	path string
	mode os.FileMode
}

// ensureChecked is EnsureDir of each of dirs that is not in checked (the
// directories an operation checked a moment ago; nil: none), adding those
// it checks.
func ensureChecked(checked map[string]bool, uid int, dirs ...dirSpec) error {
	for _, p := range dirs {
		if checked[p.path] {
			continue
		}
		if err := EnsureDir(p.path, p.mode, uid); err != nil {
			return err
		}
		if checked != nil {
			checked[p.path] = true
		}
	}
	return nil
}

// readDirIfAny lists the directory path, opened without following a
// symbolic link and checked for uid; a missing one holds nothing. Every
// other error that is not a refusal is code 5.
func readDirIfAny(path string, uid int) ([]os.DirEntry, error) {
	fd, err := openatRetry(atFDCWD, path, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR):
		// checkDir says which, with Open's code: a link is 7, a file 5.
		if _, err := checkDir(path, uid); err != nil {
			return nil, err
		}
		return nil, unsafeDir(path, "was a symbolic link or not a directory", uid)
	case err != nil:
		return nil, cnierr.IO("read", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err == nil {
		err = SafeDir(path, fi, uid)
	}
	var des []os.DirEntry
	if err == nil {
		des, err = f.ReadDir(-1)
	}
	if err != nil && cnierr.As(err) == nil {
		err = cnierr.IO("read", path, err)
	}
	return des, err
}

// trustedOwner: a file of owner may be relied on by uid.
func trustedOwner(owner uint32, uid int) bool { return owner == 0 || int(owner) == uid }
