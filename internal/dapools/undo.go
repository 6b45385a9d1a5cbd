package dapools

import (
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// undo is what a failed ADD must put back so that it leaves nothing on
// disk: the addresses it reserved and the round-robin cursors it moved
// (host-local leaves its cursors moved, so the next ADD after a failed one
// gets a different address than it would have).
type undo struct {
	reserved map[*hostlocal.Disk][]netip.Addr
	cursors  []savedCursor // in the order saved
	// records are hold records this ADD wrote for fresh reservations,
	// claims the holds it gave to the attachment.
	records []savedHold
	claims  []claimedHold
}

type savedHold struct {
	disk *hostlocal.Disk
	id   string
}

type claimedHold struct {
	disk  *hostlocal.Disk
	entry hostlocal.HoldEntry
}

func (u *undo) recorded(d *hostlocal.Disk, id string) {
	u.records = append(u.records, savedHold{d, id})
}

func (u *undo) claimed(d *hostlocal.Disk, e hostlocal.HoldEntry) {
	u.claims = append(u.claims, claimedHold{d, e})
}

type savedCursor struct {
	disk   *hostlocal.Disk
	cursor hostlocal.Cursor
}

// saveCursor records d's cursor rangeID before an Allocate may move it.
func (u *undo) saveCursor(d *hostlocal.Disk, rangeID int) error {
	c, err := d.SaveCursor(rangeID)
	if err == nil {
		u.cursors = append(u.cursors, savedCursor{d, c})
	}
	return err
}

func (u *undo) reservedIn(d *hostlocal.Disk, ip netip.Addr) {
	if u.reserved == nil {
		u.reserved = map[*hostlocal.Disk][]netip.Addr{}
	}
	u.reserved[d] = append(u.reserved[d], ip)
}

// run frees the reservations, then restores the cursors newest first, so
// that a cursor saved twice (two targets in one directory and range set)
// ends as it was before the first. Failures are logged: the ADD's own
// error is what the runtime must see.
func (u *undo) run(att alloc.Attachment, log *logging.Logger) {
	// Holds first: a claimed one goes back to held (file, then record), a
	// fresh one's record goes before its reservation, so that a crash in
	// between leaves a plain reservation, never a record of a freed
	// address that someone else then takes.
	for _, c := range u.claims {
		if err := c.disk.Unclaim(c.entry, att); err != nil {
			log.Error("hold not restored", logging.String("dir", c.disk.Dir()), logging.Error(err))
		}
	}
	for _, r := range u.records {
		if err := r.disk.DropHold(r.id); err != nil {
			log.Error("hold record not removed", logging.String("dir", r.disk.Dir()), logging.Error(err))
		}
	}
	for d, ips := range u.reserved {
		if err := alloc.Rollback(d, att, ips); err != nil {
			log.Error("rollback failed", logging.String("dir", d.Dir()), logging.Error(err))
		}
	}
	for i := len(u.cursors) - 1; i >= 0; i-- {
		s := u.cursors[i]
		if err := s.disk.RestoreCursor(s.cursor); err != nil {
			log.Error("cursor not restored", logging.String("dir", s.disk.Dir()), logging.Error(err))
		}
	}
}
