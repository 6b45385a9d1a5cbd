package hostlocal

import (
	"bytes"
	"net/netip"
)

// Cursor is one round-robin cursor file, last_reserved_ip.N, as it is on
// disk. A failed ADD saves and puts back every cursor it moved, byte for
// byte, so that it leaves nothing behind and the next ADD gets the address
// it would have got without it; fsck reads them to find damaged ones.
type Cursor struct {
	RangeID int
	Raw     []byte     // the file's exact content; nil: there is no such file
	Addr    netip.Addr // the address Raw names; invalid when it names none
}

// readCursor returns range set rangeID's cursor, the file path, as it is
// (a missing cursor included), read as host-local does: surrounding white
// space ignored, anything that is not one address names none.
func readCursor(path string, rangeID int) (Cursor, error) {
	data, err := readFile(path)
	c := Cursor{RangeID: rangeID, Raw: data}
	if ip, err := netip.ParseAddr(string(bytes.TrimSpace(data))); err == nil && ip.Zone() == "" {
		c.Addr = ip.Unmap()
	}
	return c, err
}

// KeepCursor implements alloc.CursorKeeper: the cursor goes back byte
// for byte (a cursor host-local could not parse stays as it was, too).
func (d *Disk) KeepCursor(rangeID int) (func() error, error) {
	path := d.cursorPath(rangeID)
	c, err := readCursor(path, rangeID)
	if err != nil {
		return nil, err
	}
	return func() error {
		if c.Raw == nil {
			d.dirty = true
			return removeIfAny(path)
		}
		return d.replaceRecycled(path, string(c.Raw))
	}, nil
}
