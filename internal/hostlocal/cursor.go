package hostlocal

import (
	"errors"
	"net/netip"
	"os"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Cursor is a saved round-robin cursor (last_reserved_ip.N): its exact
// content, or that the file did not exist. A failed ADD puts back every
// cursor it moved, so that it leaves nothing behind on disk and the next
// ADD gets the address it would have got without it.
type Cursor struct {
	RangeID int
	content []byte // nil: no cursor file
}

// SaveCursor implements Store.
func (d *Disk) SaveCursor(rangeID int) (Cursor, error) {
	data, err := readSmall(d.cursorPath(rangeID))
	if errors.Is(err, os.ErrNotExist) {
		return Cursor{RangeID: rangeID}, nil
	}
	if err != nil {
		return Cursor{}, cnierr.IO("read", d.cursorPath(rangeID), err)
	}
	if data == nil {
		data = []byte{}
	}
	return Cursor{RangeID: rangeID, content: data}, nil
}

// RestoreCursor implements Store, byte for byte (a cursor host-local
// could not parse stays as it was, too).
func (d *Disk) RestoreCursor(c Cursor) error {
	path := d.cursorPath(c.RangeID)
	d.dirty = true
	if c.content == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return cnierr.IO("remove", path, err)
		}
		return nil
	}
	return d.replaceRecycled(path, string(c.content))
}

// SaveCursor implements Store.
func (m *MemStore) SaveCursor(rangeID int) (Cursor, error) {
	c := Cursor{RangeID: rangeID}
	if ip, ok := m.last[rangeID]; ok {
		c.content = []byte(ip.String())
	}
	return c, nil
}

// RestoreCursor implements Store.
func (m *MemStore) RestoreCursor(c Cursor) error {
	if c.content == nil {
		delete(m.last, c.RangeID)
		return nil
	}
	m.last[c.RangeID] = netip.MustParseAddr(string(c.content)) // SaveCursor wrote it
	return nil
}
