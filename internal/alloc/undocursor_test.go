package alloc_test

import (
	"errors"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// cursors is a CursorKeeper over one value per range set.
type cursors struct {
	at   map[int]string
	fail error // what every restore answers
}

func (c *cursors) KeepCursor(rangeID int) (func() error, error) {
	was, had := c.at[rangeID]
	return func() error {
		if c.fail != nil {
			return c.fail
		}
		if had {
			c.at[rangeID] = was
		} else {
			delete(c.at, rangeID)
		}
		return nil
	}, nil
}

// A failed ADD puts every cursor it moved back as it was before the ADD,
// a cursor saved twice (two targets in one range set) included, and one
// it created goes.
func TestUndoPutsCursorsBack(t *testing.T) {
	c := &cursors{at: map[int]string{0: "10.0.0.3"}}
	var u alloc.Undo
	for _, step := range []struct {
		id   int
		move string
	}{{0, "10.0.0.4"}, {0, "10.0.0.5"}, {1, "10.0.1.2"}} {
		if err := u.Cursor(c, step.id); err != nil {
			t.Fatal(err)
		}
		c.at[step.id] = step.move
	}
	if err := u.Run(alloctest.CidA); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.at[0]; !ok || got != "10.0.0.3" || len(c.at) != 1 {
		t.Errorf("cursors after the undo = %v, want only 0: 10.0.0.3", c.at)
	}
}

// A cursor that cannot be put back is the undo's error, not the end of
// the undo.
func TestUndoCursorFailure(t *testing.T) {
	broken := errors.New("read-only file system")
	c := &cursors{at: map[int]string{}, fail: broken}
	var u alloc.Undo
	for id := range 2 {
		if err := u.Cursor(c, id); err != nil {
			t.Fatal(err)
		}
	}
	err := u.Run(alloctest.CidA)
	if !errors.Is(err, broken) {
		t.Fatalf("Run = %v, want the restore's error", err)
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 2 {
		t.Errorf("Run reported %d failures, want both cursors' (%v)", n, err)
	}
}
