package hostlocal

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// maxIndexProblems bounds what one directory reports: a wholly wrong
// index would otherwise print one line per attachment.
const maxIndexProblems = 20

// Health is what Examine found in one state directory.
type Health struct {
	Reservations []Reservation // sorted by address
	Cursors      []Cursor
	Index        string // IndexValid, IndexStale or IndexUntrusted (see trust)
	// IndexProblems are differences between an index the plugins trust
	// (its stamp is valid) and the reservation files: a torn or edited
	// bucket that the stamp cannot reveal.
	IndexProblems []string
	// Stale are scratch files a crash or a failed call left behind, which
	// a plugin would not clean up by itself.
	Stale []string
	// Unknown are files in the directory that are neither the lock, a
	// cursor nor a reservation. They are reported, never touched.
	Unknown []string
	// Holds are the sticky hold records, judged against their files
	// (alloc.HoldRecord.Stale); Orphans the held files no valid record names.
	Holds   []alloc.HoldRecord
	Orphans []netip.Addr
	// Tenants are the tenants' address records (quotas), judged against
	// the reservations: a stale one counts its tenant an address too many.
	Tenants []TenantRecord
	// UnusedTokens are tenants' tokens no record links (a tenant that
	// holds nothing here any more), which GC and Repair remove.
	UnusedTokens []string
}

// Examine checks dir under its lock (the lock is held for this one
// directory's read) and changes nothing, not even a stale index: it is a
// read view of what Open would load, judged by the same trust rule.
func Examine(dir string, lockTimeout time.Duration) (*Health, error) {
	d := newStateDir(dir)
	if _, err := checkDir(d.dir, d.uid); err != nil {
		return nil, err
	}
	lk, err := acquireLock(d.dir, d.uid, lockTimeout)
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	ents, err := readEntries(d.dir, d.uid)
	if err != nil {
		return nil, err
	}
	h := &Health{}
	if h.Reservations, err = readReservations(d.dir, ents.reservations); err != nil {
		return nil, err
	}
	for _, n := range ents.cursors {
		c, err := readCursor(child(d.dir, n.name), n.id)
		if err != nil {
			return nil, err
		}
		if c.Raw != nil { // gone since the listing
			h.Cursors = append(h.Cursors, c)
		}
	}
	slices.SortFunc(h.Cursors, func(a, b Cursor) int { return a.RangeID - b.RangeID })
	if h.Index, _, err = d.trust(); err != nil {
		return nil, err
	}
	// The checks below only read, each its own files: one failing need
	// not stop the others, and the report names every failure.
	var errs [5]error
	if h.Index == IndexValid {
		h.IndexProblems, errs[0] = d.indexProblems(h.Reservations)
	}
	h.Stale, errs[1] = d.staleScratch()
	// The held files that no valid record names are alloc.Orphans.
	v := alloc.GCView{Owners: map[netip.Addr]alloc.Attachment{}}
	for _, r := range h.Reservations {
		v.Owners[r.Addr] = r.Owner
	}
	v.Holds, errs[2] = alloc.ListHolds(d)
	h.Holds, h.Orphans = v.Holds, alloc.Orphans(v)
	h.Tenants, errs[3] = d.tenantRecords(Addrs(h.Reservations))
	h.UnusedTokens, errs[4] = d.unusedTokens()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(slices.Values(ents.other)) {
		h.Unknown = append(h.Unknown, filepath.Join(d.dir, name))
	}
	return h, nil
}

// Repair fixes, under dir's lock and exactly as a plugin would write,
// what can be fixed without losing a reservation, whatever it finds
// then (a plugin may have changed dir since Examine): it rebuilds the
// index, which replaces the whole index tree (a wrong bucket, a stale
// scratch file, an interrupted rebuild's leftovers: everything Examine
// reports of it), removes the cursors listed in dropCursors (an
// unparseable or out-of-range cursor only costs the round-robin
// position, which then restarts at the range's start), and repairs the
// hold and tenant records. It never removes a reservation. fsck reports
// from its own findings, so Repair does not say what it did.
func Repair(dir string, lockTimeout time.Duration, dropCursors []int) (err error) {
	d, err := Open(dir, lockTimeout)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.Close()) }()
	// Open rebuilt a stale index already (the cache is complete); an
	// untrusted one is stamped anew: Close finds out again whether the
	// file system keeps the stamp.
	if !d.complete || d.untrusted {
		d.untrusted = false
		if err := d.rebuild(); err != nil {
			return err
		}
	}
	for _, id := range dropCursors {
		if err := removeIfAny(d.cursorPath(id)); err != nil {
			return err
		}
	}
	if err := d.repairHolds(time.Now()); err != nil {
		return err
	}
	_, err = d.RepairTenants()
	return err
}

// indexProblems compares every bucket with what a rebuild from rs (sorted
// by address, as every reader returns them) would write. With the stamp
// valid they must agree exactly: every change a plugin makes updates both
// under the lock.
func (d stateDir) indexProblems(rs []Reservation) ([]string, error) {
	want := map[string]string{} // by key: the addresses, joined by ","
	for _, r := range rs {
		if key, ok := entryKey(r.Owner.Key()); ok {
			want[key] = strings.TrimPrefix(want[key]+","+r.Addr.String(), ",")
		}
	}
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	got := map[string][]netip.Addr{} // by key: the addresses listed, never nil
	for n := range numBuckets {
		name := bucketName(uint8(n))
		data, err := readFile(child(d.idx, name))
		if err != nil {
			return nil, err
		}
		lineNo := 0
		for line := range strings.Lines(string(data)) {
			lineNo++
			fields := strings.Fields(line)
			switch {
			case !strings.HasSuffix(line, "\n"):
				report("index bucket %s: line %d is cut short (torn write)", name, lineNo)
			case len(fields) < 2 || !strings.Contains(fields[0], "@") || fields[0][0] == '@':
				if line = strings.TrimRight(line, "\n"); len(line) > 60 {
					line = line[:60] + "..."
				}
				report("index bucket %s: line %d is not \"<containerID>@<ifname> <ip>...\": %q", name, lineNo, line)
			case keyBucket(fields[0]) != name:
				report("index bucket %s: line %d (%s) belongs in bucket %s", name, lineNo, fields[0], keyBucket(fields[0]))
			case got[fields[0]] != nil:
				report("index bucket %s: %s is listed twice", name, fields[0])
			default:
				addrs := []netip.Addr{}
				for _, f := range fields[1:] {
					if ip, err := netip.ParseAddr(f); err == nil && ip.String() == f {
						addrs = append(addrs, ip)
					} else {
						report("index bucket %s: line %d lists %q, not an address", name, lineNo, f)
					}
				}
				slices.SortFunc(addrs, netip.Addr.Compare)
				got[fields[0]] = addrs
			}
		}
	}
	keys := slices.AppendSeq(slices.Collect(maps.Keys(want)), maps.Keys(got))
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		w, g := want[k], joinAddrs(got[k], ",")
		switch {
		case w == g:
		case got[k] == nil:
			report("index bucket %s has no line for %s, which holds %s", keyBucket(k), k, w)
		case w == "":
			report("index bucket %s lists %s with %s, which it does not hold", keyBucket(k), k, g)
		default:
			report("index bucket %s lists %s with %s, the reservations say %s", keyBucket(k), k, g, w)
		}
	}
	if len(problems) > maxIndexProblems {
		more := len(problems) - maxIndexProblems
		problems = append(problems[:maxIndexProblems], fmt.Sprintf("... and %d more index problems", more))
	}
	return problems, nil
}

// keyBucket is the name of the bucket a line's key "<containerID>@<ifname>"
// belongs in.
func keyBucket(key string) string {
	id, ifname, _ := strings.Cut(key, "@")
	return bucketName(bucketOf(alloc.Attachment{ContainerID: id, IfName: ifname}))
}

// staleScratch lists what a crash or failed call left in the index tree:
// the scratch files .tmp and .tmpw are spares between operations and are
// fine while they have one name; .tmpw-old exists only inside a cursor
// update, and the .new/.old trees only inside a rebuild, both under the
// lock; anything else in the index directory is not ours.
func (d stateDir) staleScratch() ([]string, error) {
	des, err := readDirIfAny(d.idx, d.uid)
	var stale []string
	for _, de := range des {
		name := de.Name()
		if name == stampName || len(name) == 3 && name[0] == 'b' && strings.Trim(name[1:], "0123456789abcdef") == "" {
			continue
		}
		if name == scratchName || name == cursorSpare {
			if fi, err := de.Info(); err == nil && fi.Mode().IsRegular() && nlink(fi) == 1 {
				continue
			}
		}
		stale = append(stale, child(d.idx, name))
	}
	fresh, old := d.rebuildDirs()
	for _, p := range []string{fresh, old} {
		if _, err := os.Lstat(p); err == nil {
			stale = append(stale, p)
		}
	}
	return stale, err
}
