package hostlocal

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Sticky hold records (see the package documentation, "Sticky holds"): a
// held address's file names the owner alloc.HoldOwner, and the record in
// D/_sticky/<ID>.json says which key it is for. This file is their I/O,
// the alloc.HoldStore methods; the transitions are the engine's.
const (
	stickyDirName = "_sticky"
	stickyExt     = ".json"
)

var _ alloc.HoldStore = (*Disk)(nil)

func (d stateDir) stickyDir() string         { return child(d.dir, stickyDirName) }
func (d stateDir) holdPath(id string) string { return child(d.stickyDir(), id+stickyExt) }

// ReadHold implements alloc.HoldReader.
func (d stateDir) ReadHold(id string) (*alloc.Hold, error) {
	data, err := readFile(d.holdPath(id))
	if data == nil {
		return nil, err
	}
	var h alloc.Hold
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%s: %w", d.holdPath(id), alloc.ErrHoldUnreadable)
	}
	return &h, nil
}

// HoldIDs implements alloc.HoldReader.
func (d stateDir) HoldIDs() ([]string, error) {
	des, err := readDirIfAny(d.stickyDir(), d.uid)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), stickyExt)
		if ok && alloc.ValidHoldID(id) && de.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Owner implements alloc.HoldReader: who ip's file names, if it exists.
func (d stateDir) Owner(ip netip.Addr) (alloc.Attachment, bool, error) {
	path, err := d.addrPath(ip)
	if err != nil {
		return alloc.Attachment{}, false, err
	}
	data, err := readFile(path)
	if data == nil {
		return alloc.Attachment{}, false, err
	}
	return parseReservation(data), true, nil
}

// Reader is dir's records and reservations, read without the lock: the
// operators' read view (leases, pools, a dry run; alloc.ListHolds judges
// the records).
func Reader(dir string) alloc.HoldReader { return newStateDir(dir) }

// ReadHold implements alloc.HoldReader once D's _sticky is checked.
func (d *Disk) ReadHold(id string) (*alloc.Hold, error) {
	if ok, err := d.subdir(d.stickyDir()); err != nil || !ok {
		return nil, err
	}
	return d.stateDir.ReadHold(id)
}

// WriteHold implements alloc.HoldStore, through replaceRecycled: a killed
// process leaves the old record or the new one, and no fresh inode is
// renamed over the old record (ext4 made that 7% of an exec'd sticky
// ADD). No fsync, as for reservations (diskfile.go): durability across
// power loss is host-local's, and the record must not be surer than the
// file it describes.
func (d *Disk) WriteHold(id string, h alloc.Hold) error {
	if err := d.faults.step(); err != nil {
		return err
	}
	if !alloc.ValidHoldID(id) {
		return cnierr.New(cnierr.CodeInternal, "invalid hold ID", "id=%q", id)
	}
	if err := d.makeSubdir(d.stickyDir()); err != nil {
		return err
	}
	return d.replaceRecycled(d.holdPath(id), string(h.AppendJSON(make([]byte, 0, 192))))
}

// RemoveHold implements alloc.HoldStore.
func (d *Disk) RemoveHold(id string) error {
	if err := d.faults.step(); err != nil {
		return err
	}
	if ok, err := d.subdir(d.stickyDir()); err != nil || !ok {
		return err
	}
	return removeIfAny(d.holdPath(id))
}

// Reassign implements alloc.HoldStore: ip's file is rewritten atomically
// (a rename over it) and ip moves between the owners' index entries.
func (d *Disk) Reassign(ip netip.Addr, from, to alloc.Attachment) error {
	if err := d.faults.step(); err != nil {
		return err
	}
	path, err := d.addrPath(ip)
	if err != nil {
		return err
	}
	if err := d.replaceRecycled(path, reservationContent(to)); err != nil {
		return err
	}
	if err := d.track(from, ip, false); err != nil {
		return err
	}
	return d.track(to, ip, true)
}

// repairHolds repairs every record as the engine judges it
// (alloc.RepairOf, what fsck reports), and frees the held files without a
// record (orphans: nothing can ever claim them).
func (d *Disk) repairHolds(now time.Time) error {
	v, err := alloc.ReadGC(d)
	if err != nil {
		return err
	}
	for _, e := range v.Holds {
		if _, err := alloc.Repair(d, alloc.RepairOf(e, now)); err != nil {
			return err
		}
	}
	for _, ip := range alloc.Orphans(v) {
		if _, err := alloc.Free(d, v.Owners[ip], []netip.Addr{ip}); err != nil {
			return err
		}
	}
	return nil
}
