package hostlocal

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Disk is one state directory, locked from Open to Close, as the
// allocation engine's store: an alloc.Lister, and an alloc.CursorKeeper
// for a failed ADD's undo.
type Disk struct {
	stateDir
	lock *Lock // nil once closed

	// untrusted: the file system cannot keep the stamp, so the index is
	// never written and buckets always come from a scan of D; or a tenant
	// record could not be removed, which the next Open's rescan must do.
	untrusted bool
	// complete: buckets hold every attachment of D (they were built from
	// a scan), so a missing key means "holds nothing".
	complete bool
	// buckets caches the index buckets loaded so far, by number.
	buckets map[uint8]*bucket
	// unindexed, in a complete cache, holds the addresses of the
	// attachments the index cannot name (entryKey), by Key().
	unindexed map[alloc.Attachment][]netip.Addr
	// exhausted is the sorted set of range-set IDs recorded as full.
	exhausted []int
	// dirty: D or the index changed since Open, so Close must re-stamp.
	dirty bool
	// subs is what subdir found of D's subdirectories (_sticky,
	// _tenants, _spill): true checked, false missing.
	subs map[string]bool
	// tmpFor is the attachment whose reservation content sits in the
	// scratch file, kept across failed link attempts so that skipping a
	// taken address costs one link(2). nil: content unknown.
	tmpFor *alloc.Attachment
	// faults, when set, may stop a write (a test's crash).
	faults *Faults
	// tenant is the hex name of the tenant the reservations are for
	// (ForTenant; "" none).
	tenant string
	// dirMoved: D's mtime has left the stamp since Open, so a crash now
	// leaves the index stale for the next Open (tenants.go).
	dirMoved bool
	// linkToken is os.Link for tenant records: a test reaches a token's
	// link limit (EMLINK) through it without 65,000 links.
	linkToken func(token, rec string) error
}

var (
	_ alloc.Lister       = (*Disk)(nil)
	_ alloc.CursorKeeper = (*Disk)(nil)
)

// Open locks dir (creating it like host-local does) within lockTimeout and
// loads or rebuilds its index. The caller must Close it.
//
// D's parent (the data directory or its _pools), D and the parent's _index
// are checked (safedir.go) before anything below them is opened; the index
// directory is checked by trust, D's _sticky where it is used.
func Open(dir string, lockTimeout time.Duration) (*Disk, error) {
	return OpenChecked(dir, lockTimeout, nil)
}

// OpenChecked is Open for one of several state directories an operation
// opens at once (the pools of an overflow chain share their parent and
// its _index): a directory in checked was checked by this operation a
// moment ago and is not checked again; those checked now are added.
func OpenChecked(dir string, lockTimeout time.Duration, checked map[string]bool) (*Disk, error) {
	sd := newStateDir(dir)
	dirs := []dirSpec{{filepath.Dir(sd.dir), modeStateDir}, {sd.dir, modeStateDir}, {filepath.Dir(sd.idx), modePrivateDir}}
	if err := ensureChecked(checked, sd.uid, dirs...); err != nil {
		return nil, err
	}
	lk, err := acquireLock(sd.dir, sd.uid, lockTimeout)
	if err != nil {
		return nil, err
	}
	d := &Disk{stateDir: sd, lock: lk, buckets: map[uint8]*bucket{}, subs: map[string]bool{}, linkToken: os.Link}
	if err := d.load(); err != nil {
		lk.Close()
		return nil, err
	}
	return d, nil
}

// subdir reports whether D has the subdirectory path, checking it
// (safedir.go) once per Open: most pools have none of them, and one
// lstat(2) tells. Under D's lock only makeSubdir creates one.
func (d *Disk) subdir(path string) (bool, error) {
	if ok, seen := d.subs[path]; seen {
		return ok, nil
	}
	_, err := checkDir(path, d.uid)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	d.subs[path] = err == nil
	return err == nil, nil
}

// makeSubdir creates D's subdirectory path where it is missing.
func (d *Disk) makeSubdir(path string) error {
	if ok, err := d.subdir(path); err != nil || ok {
		return err
	}
	d.dirty = true // a new entry in D: Close re-stamps it
	return ensureChecked(d.subs, d.uid, dirSpec{path, modePrivateDir})
}

// load uses the on-disk index as is when trust allows, and otherwise
// rebuilds it (an index that cannot even be judged included), unless its
// directory is not safe to use (safedir.go): that is refused.
func (d *Disk) load() error {
	state, exhausted, err := d.trust()
	switch {
	case cnierr.Code(err) == cnierr.CodeInvalidConfig:
		return err
	case err == nil && state == IndexUntrusted:
		d.untrusted = true
		return d.rescan()
	case err == nil && state == IndexValid:
		d.exhausted = exhausted
		return nil
	}
	return d.rebuild()
}

// Close writes back the index, stamps it and releases the lock. The
// reservations themselves are already on disk when it runs; an error here
// only means the next Open will rebuild the index, so callers may log it
// rather than fail an operation that otherwise succeeded.
func (d *Disk) Close() error {
	if d.lock == nil {
		return nil
	}
	// A scratch file left behind is a spare for the next ADD, not litter.
	err := errors.Join(d.commit(), d.lock.Close())
	d.lock = nil
	return err
}

// Reserve implements alloc.Store: the file appears in D, complete, or not at all.
func (d *Disk) Reserve(a alloc.Attachment, ip netip.Addr) (bool, error) {
	if err := d.faults.step(); err != nil {
		return false, err
	}
	final, err := d.addrPath(ip)
	if err != nil {
		return false, err
	}
	if !a.Recordable() {
		return false, cnierr.InvalidEnv("CNI_CONTAINERID", a.ContainerID, "cannot be recorded in a reservation")
	}
	if d.tenant != "" {
		// Under the lock a file there means taken; a free address is
		// the tenant's before it is reserved (tenants.go).
		if _, err := os.Lstat(final); err == nil {
			return false, nil
		}
		if err := d.tag(ip); err != nil {
			return false, err
		}
	}
	ok, err := d.link(a, ip, final)
	if d.tenant != "" && !ok {
		err = errors.Join(err, d.untag(ip))
	}
	return ok, err
}

// link makes the reservation of ip for a: the scratch file, written with
// a's content, linked as final.
func (d *Disk) link(a alloc.Attachment, ip netip.Addr, final string) (bool, error) {
	if d.tmpFor == nil || *d.tmpFor != a {
		d.dirty = true // the scratch file lives in the index directory
		if err := overwriteAlone(d.scratch(), reservationContent(a)); err != nil {
			return false, err
		}
		d.tmpFor = &a
	}
	if err := os.Link(d.scratch(), final); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, cnierr.IO("link", final, err)
	}
	d.dirty, d.dirMoved = true, true
	// The scratch inode is now the reservation: the index has it first,
	// so that a DEL finds it whatever fails next; then its second name
	// goes, so that the next overwrite cannot reach it.
	d.tmpFor = nil
	return true, errors.Join(d.track(a, ip, true), removeIfAny(d.scratch()))
}

// track adds ip to a's index entry (add), or removes it.
func (d *Disk) track(a alloc.Attachment, ip netip.Addr, add bool) error {
	addrs, err := d.addrs(a)
	if err != nil {
		return err
	}
	switch i, found := slices.BinarySearchFunc(addrs, ip, netip.Addr.Compare); {
	case add && !found:
		d.set(a, slices.Insert(addrs, i, ip))
	case !add && found:
		d.set(a, slices.Delete(addrs, i, i+1))
	}
	return nil
}

// Release implements alloc.Ledger; the file's content, not the index, decides
// ownership.
func (d *Disk) Release(a alloc.Attachment, ip netip.Addr) (bool, error) {
	if err := d.faults.step(); err != nil {
		return false, err
	}
	owner, ok, err := d.Owner(ip)
	if err != nil || !ok || !a.Owns(owner) {
		return false, err
	}
	// Moving the file out of D is as atomic as unlinking it, and keeps
	// its inode as the scratch file of the next ADD (see recycle).
	path, _ := d.addrPath(ip)
	d.dirty, d.dirMoved = true, true
	d.tmpFor = nil
	if err := os.Rename(path, d.scratch()); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, cnierr.IO("remove", path, err)
	}
	// Its tenant record goes after it (tenants.go), its index entry anyway.
	return true, errors.Join(d.untag(ip), d.track(a, ip, false))
}

// ByAttachment implements alloc.Ledger from the index (addrs).
func (d *Disk) ByAttachment(a alloc.Attachment) ([]netip.Addr, error) { return d.addrs(a) }

// All implements alloc.Lister with a full scan of D; only GC needs it.
func (d *Disk) All() (map[netip.Addr]alloc.Attachment, error) { return d.scan() }

// LastReserved implements alloc.Store. Like host-local, an unreadable cursor is
// not an error: it only costs the round-robin position.
func (d *Disk) LastReserved(rangeID int) (netip.Addr, error) {
	c, err := readCursor(d.cursorPath(rangeID), rangeID)
	return c.Addr, err
}

// SetLastReserved implements alloc.Ledger, replacing the cursor atomically.
func (d *Disk) SetLastReserved(rangeID int, ip netip.Addr) error {
	if err := d.faults.step(); err != nil {
		return err
	}
	return d.replaceRecycled(d.cursorPath(rangeID), ip.String())
}

// MarkExhausted implements alloc.Store; the record lives in the stamp file and
// is written by Close.
func (d *Disk) MarkExhausted(rangeID int) error {
	if err := d.faults.step(); err != nil {
		return err
	}
	if !d.untrusted && !slices.Contains(d.exhausted, rangeID) {
		d.exhausted = append(d.exhausted, rangeID)
		slices.Sort(d.exhausted)
		d.dirty = true
	}
	return nil
}

// ClearExhausted implements alloc.Ledger.
func (d *Disk) ClearExhausted() error {
	if err := d.faults.step(); err != nil {
		return err
	}
	if len(d.exhausted) > 0 {
		d.exhausted = nil
		d.dirty = true
	}
	return nil
}
