package alloc

// CursorKeeper is a store that can put a round-robin cursor back as it
// was, so that a failed ADD leaves no trace: without it, the next ADD
// after a failed one would start its search further on and get another
// address than it would have got (host-local leaves its cursors moved).
type CursorKeeper interface {
	// KeepCursor saves range set rangeID's cursor as it is now and
	// returns what puts it back so (removing it, when there was none).
	KeepCursor(rangeID int) (restore func() error, err error)
}

// Cursor saves, before an allocation in range set rangeID of s may move
// its cursor, the cursor Run puts back.
func (u *Undo) Cursor(s CursorKeeper, rangeID int) error {
	restore, err := s.KeepCursor(rangeID)
	if err == nil {
		u.cursors = append(u.cursors, restore)
	}
	return err
}

// restoreCursors puts the saved cursors back newest first, so that a
// cursor saved twice (two targets in one range set) ends as it was
// before the first save.
func (u *Undo) restoreCursors() []error {
	var errs []error
	for i := len(u.cursors) - 1; i >= 0; i-- {
		errs = append(errs, u.cursors[i]())
	}
	return errs
}
