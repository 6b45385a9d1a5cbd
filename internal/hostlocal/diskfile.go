package hostlocal

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// stateDir names a state directory D and its index: what the locked Disk
// and the lock-free readers (fsck, leases, STATUS) have in common.
type stateDir struct {
	dir string // state directory D
	idx string // index directory of D
	uid int    // the user every directory must belong to (safedir.go)
}

func newStateDir(dir string) stateDir {
	dir = filepath.Clean(dir)
	return stateDir{dir: dir, idx: IndexDir(dir), uid: os.Geteuid()}
}

// addrPath is the reservation file of ip. Only plain canonical addresses
// are accepted, so the name can never contain a '/' or be "." or "..".
func (d stateDir) addrPath(ip netip.Addr) (string, error) {
	if !ip.IsValid() || ip.Zone() != "" || ip.Is4In6() {
		return "", cnierr.New(cnierr.CodeInternal, "invalid address for a reservation", "address=%s", ip)
	}
	return child(d.dir, ip.String()), nil
}

// cursorPath is host-local's last_reserved_ip.<rangeID>.
func (d stateDir) cursorPath(rangeID int) string {
	return child(d.dir, "last_reserved_ip."+strconv.Itoa(rangeID))
}

func (d stateDir) scratch() string { return child(d.idx, scratchName) }

// child is dir/name for a clean dir and a name of one element (never "",
// ".", ".." nor holding a '/'): filepath.Join without the Clean it would
// run on each of the dozens of paths an operation builds.
func child(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// The small files of a state directory are read and written with raw
// system calls. os.OpenFile would register each descriptor with the
// runtime's network poller (four failing fcntl/epoll calls per file, and
// the poller's own set-up on first use): for an ADD that was more system
// calls than the file operations themselves. Errors are *os.PathError
// around the errno, so errors.Is(err, os.ErrNotExist) works as usual.

// errNotRegular is what readAt finds where a file of the store should be.
var errNotRegular = errors.New("not a regular file")

// readAt reads the file name in the directory dirfd (atFDCWD: name is a
// path) whole and returns its status too (errNotRegular comes with it).
// Only a regular file is read: a FIFO planted in a state directory would
// otherwise block the open, or feed the read without end. The buffer is
// the stated size plus one byte, so a file takes one read(2): a short
// read of a regular file is its end.
func readAt(dirfd int, name string) ([]byte, syscall.Stat_t, error) {
	var st syscall.Stat_t
	fd, err := openatRetry(dirfd, name, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, st, err
	}
	defer syscall.Close(fd)
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, st, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, st, errNotRegular
	}
	buf := make([]byte, 0, st.Size+1)
	for {
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, st, err
		}
		buf = buf[:len(buf)+n]
		if len(buf) < cap(buf) {
			return buf, st, nil
		}
		buf = append(buf, 0)[:len(buf)] // it grew since the fstat
	}
}

// readFile is readAt of path: nil (and no error) when it does not exist,
// never nil when it does (readAt's buffer), even empty.
func readFile(path string) ([]byte, error) {
	data, _, err := readAt(atFDCWD, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, cnierr.IO("read", path, err)
	}
	return data, nil
}

// overwrite rewrites path (creating it with mode) in place: write at
// offset 0, then cut the tail; the one way this package writes a file.
// In place, a crash mid-write can leave a torn file: that is safe for
// index files, whose consistency rests on the stamp (a torn file is never
// trusted), and for files whose name is published only once they are
// whole (overwriteAlone) or that a crash only leaves behind as a record
// that counts too much (tokens, spill records). Unlike truncate-to-zero or
// rename-over, it does not make ext4 (auto_da_alloc) flush the data
// synchronously, which on some disks costs a millisecond per write. No
// fsync: durability across power loss is host-local's.
func overwrite(path, s string, mode uint32) error {
	fd, err := openatRetry(atFDCWD, path, syscall.O_WRONLY|syscall.O_CREAT, mode)
	if err != nil {
		return cnierr.IO("open", path, err)
	}
	for b, off := []byte(s), 0; err == nil && off < len(b); {
		var n int
		if n, err = syscall.Pwrite(fd, b[off:], int64(off)); err == syscall.EINTR {
			n, err = 0, nil
		}
		off += n
	}
	if err == nil {
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

// removeIfAny removes the file path; one already gone is no error.
func removeIfAny(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return cnierr.IO("remove", path, err)
	}
	return nil
}

// atFDCWD is AT_FDCWD: openat relative to the working directory, which
// for an absolute name is open(2).
const atFDCWD = -0x64

// openatRetry opens name relative to the directory dirfd (atFDCWD: name
// is a path), never through a symbolic link as its last component
// (safedir.go: the directories above it are checked).
func openatRetry(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, mode)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}

// entries is one listing of a state directory, its names sorted out the
// one way every reader needs: reservations (named by a canonical address,
// which also keeps '/', "." and ".." out) by address, cursors, and
// anything else, in directory order.
type entries struct {
	reservations []namedAddr
	cursors      []namedCursor
	other        []string // neither the lock, a cursor nor a reservation
}

type namedAddr struct {
	name    string
	ip      netip.Addr
	regular bool // from the directory entry's type: no stat(2)
}

type namedCursor struct {
	name string
	id   int
}

// readEntries lists dir, checked for uid (safedir.go), with one
// getdents(2) pass; a missing dir holds nothing.
func readEntries(dir string, uid int) (entries, error) {
	des, err := readDirIfAny(dir, uid)
	if err != nil {
		return entries{}, err
	}
	e := entries{reservations: make([]namedAddr, 0, len(des))}
	for _, de := range des {
		name := de.Name()
		if ip, err := netip.ParseAddr(name); err == nil && ip.String() == name {
			e.reservations = append(e.reservations, namedAddr{name, ip, de.Type().IsRegular()})
		} else if id, ok := cursorID(name); ok {
			e.cursors = append(e.cursors, namedCursor{name, id})
		} else if name != lockName && name != stickyDirName && name != tenantsDirName && name != spillDirName {
			e.other = append(e.other, name)
		}
	}
	slices.SortFunc(e.reservations, func(a, b namedAddr) int { return a.ip.Compare(b.ip) })
	return e, nil
}

// cursorID parses "last_reserved_ip.<N>" the way host-local names it.
// Digits only: Atoi alone would take a sign too.
func cursorID(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "last_reserved_ip.")
	n, err := strconv.Atoi(s)
	return n, ok && err == nil && s[0] >= '0' && n <= 1<<24
}

// scan reads every reservation file of D: the O(n) path used by GC,
// rebuilds, untrusted file systems and unindexable attachments. Anything
// that is not a regular file is not a reservation a plugin wrote.
func (d *Disk) scan() (map[netip.Addr]alloc.Attachment, error) {
	ents, err := readEntries(d.dir, d.uid)
	if err != nil {
		return nil, err
	}
	rs, err := readReservations(d.dir, slices.DeleteFunc(ents.reservations, func(n namedAddr) bool { return !n.regular }))
	if err != nil {
		return nil, err
	}
	all := make(map[netip.Addr]alloc.Attachment, len(rs))
	for _, r := range rs {
		all[r.Addr] = r.Owner
	}
	return all, nil
}
