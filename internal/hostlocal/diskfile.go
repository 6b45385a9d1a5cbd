package hostlocal

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Scratch files live in the index directory: same file system as D (so
// link and rename work), never seen by host-local, and discarded with the
// whole directory when a crash forces a rebuild. They are also recycled
// inodes (see recycle.go).
const (
	scratchName = ".tmp"      // reservation content, linked into D
	cursorSpare = ".tmpw"     // next content of a cursor, renamed into D
	cursorOld   = ".tmpw-old" // the replaced cursor, on its way to cursorSpare
)

// addrPath is the reservation file of ip. Only plain canonical addresses
// are accepted, so the name can never contain a '/' or be "." or "..".
func (d *Disk) addrPath(ip netip.Addr) (string, error) {
	if !ip.IsValid() || ip.Zone() != "" || ip.Is4In6() {
		return "", cnierr.New(cnierr.CodeInternal, "invalid address for a reservation", "address=%s", ip)
	}
	return filepath.Join(d.dir, ip.String()), nil
}

// cursorPath is host-local's last_reserved_ip.<rangeID>.
func (d *Disk) cursorPath(rangeID int) string {
	return filepath.Join(d.dir, "last_reserved_ip."+strconv.Itoa(rangeID))
}

func (d *Disk) scratch() string { return filepath.Join(d.idx, scratchName) }

// The small files of a state directory are read and written with raw
// system calls. os.OpenFile would register each descriptor with the
// runtime's network poller (four failing fcntl/epoll calls per file, and
// the poller's own set-up on first use): for an ADD that was more system
// calls than the file operations themselves. Errors are *os.PathError
// around the errno, so errors.Is(err, os.ErrNotExist) works as usual.

// readSmall reads a whole small file.
func readSmall(path string) ([]byte, error) { return readSized(path, 128) }

// readSized reads a whole file into a buffer of initial capacity size, so
// that a file of up to about that size takes one read(2) plus the one
// that sees its end.
func readSized(path string, size int) ([]byte, error) {
	fd, err := openRetry(path, syscall.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	return readFD(fd, path, size)
}

// readRetry is one read(2), retried on EINTR.
func readRetry(fd int, buf []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, buf)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// readFD reads fd to its end into a buffer of initial capacity size.
func readFD(fd int, path string, size int) ([]byte, error) {
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// overwrite rewrites path in place: write at offset 0, then cut the tail.
// It is only for index files, whose consistency rests on the stamp and
// not on atomic replacement (a crash mid-write leaves the stamp stale, so
// the torn file is never trusted). Unlike truncate-to-zero or
// rename-over, it does not make ext4 (auto_da_alloc) flush the data
// synchronously, which on some disks costs a millisecond per write.
func overwrite(path, s string) error {
	return writeSmall(path, s, syscall.O_WRONLY|syscall.O_CREAT, true)
}

// writeFile truncates or creates path with mode 0644 (host-local's) and
// writes s. No fsync: durability across power loss is host-local's too.
func writeFile(path, s string) error {
	return writeSmall(path, s, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, false)
}

func writeSmall(path, s string, flags int, cutTail bool) error {
	fd, err := openRetry(path, flags, 0o644)
	if err != nil {
		return cnierr.IO("open", path, err)
	}
	err = pwriteAll(fd, []byte(s))
	if err == nil && cutTail {
		err = syscall.Ftruncate(fd, int64(len(s)))
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return cnierr.IO("write", path, err)
	}
	return nil
}

func pwriteAll(fd int, b []byte) error {
	for off := 0; off < len(b); {
		n, err := syscall.Pwrite(fd, b[off:], int64(off))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		off += n
	}
	return nil
}

// atFDCWD is AT_FDCWD: openat relative to the working directory, which
// for an absolute name is open(2).
const atFDCWD = -0x64

// openatRetry opens name relative to the directory dirfd, read-only.
func openatRetry(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}

func openRetry(path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC, mode)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// scan reads every reservation file of D: the O(n) path used by GC,
// rebuilds, untrusted file systems and unindexable attachments.
func (d *Disk) scan() (map[netip.Addr]alloc.Attachment, error) {
	des, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, cnierr.IO("read", d.dir, err)
	}
	all := make(map[netip.Addr]alloc.Attachment, len(des))
	for _, de := range des {
		ip, err := netip.ParseAddr(de.Name())
		if err != nil || ip.String() != de.Name() || !de.Type().IsRegular() {
			continue // lock, cursors, anything that is not ours
		}
		path := filepath.Join(d.dir, de.Name())
		data, err := readSmall(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, cnierr.IO("read", path, err)
		}
		all[ip] = parseReservation(data)
	}
	return all, nil
}
