package dapools

import (
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// undo is what a failed ADD must put back so that it leaves nothing on
// disk: what the engine's alloc.Undo puts back (reservations, holds), and
// the round-robin cursors the ADD moved (host-local leaves its cursors
// moved, so the next ADD after a failed one gets a different address than
// it would have).
type undo struct {
	alloc.Undo
	cursors []savedCursor // in the order saved
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

// run undoes the engine's part, then restores the cursors newest first,
// so that a cursor saved twice (two targets in one directory and range
// set) ends as it was before the first. Failures are logged: the ADD's
// own error is what the runtime must see.
func (u *undo) run(att alloc.Attachment, log *logging.Logger) {
	if err := u.Undo.Run(att); err != nil {
		log.Error("rollback failed", logging.Error(err))
	}
	for i := len(u.cursors) - 1; i >= 0; i-- {
		s := u.cursors[i]
		if err := s.disk.RestoreCursor(s.cursor); err != nil {
			log.Error("cursor not restored", logging.String("dir", s.disk.Dir()), logging.Error(err))
		}
	}
}
