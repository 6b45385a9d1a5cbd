package dapools

import (
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// undo is what a failed ADD must put back so that it leaves nothing on
// disk: the addresses it reserved and the round-robin cursors it moved
// (host-local leaves its cursors moved, so the next ADD after a failed one
// gets a different address than it would have).
type undo struct {
	reserved map[string][]netip.Addr
	cursors  []savedCursor // in the order saved
}

type savedCursor struct {
	dir    string
	cursor hostlocal.Cursor
}

// saveCursor records t's cursor before an Allocate may move it.
func (u *undo) saveCursor(st *stores, t target) error {
	c, err := st.disks[t.dir].SaveCursor(t.rangeID)
	if err == nil {
		u.cursors = append(u.cursors, savedCursor{t.dir, c})
	}
	return err
}

func (u *undo) reservedIn(dir string, ip netip.Addr) {
	if u.reserved == nil {
		u.reserved = map[string][]netip.Addr{}
	}
	u.reserved[dir] = append(u.reserved[dir], ip)
}

// run frees the reservations, then restores the cursors newest first, so
// that a cursor saved twice (two targets in one directory and range set)
// ends as it was before the first. Failures are logged: the ADD's own
// error is what the runtime must see.
func (u *undo) run(st *stores, att hostlocal.Attachment, log *logging.Logger) {
	for dir, ips := range u.reserved {
		if err := st.allocator(dir).Rollback(att, ips); err != nil {
			log.Error("rollback failed", logging.String("dir", dir), logging.Error(err))
		}
	}
	for i := len(u.cursors) - 1; i >= 0; i-- {
		s := u.cursors[i]
		if err := st.disks[s.dir].RestoreCursor(s.cursor); err != nil {
			log.Error("cursor not restored", logging.String("dir", s.dir), logging.Error(err))
		}
	}
}
