package hostlocal

import "net/netip"

// Store is the state of one directory as the allocator sees it, mirroring
// host-local's allocator/backend split. Every method is called with the
// directory lock held, so implementations need no locking of their own.
type Store interface {
	// Reserve records ip for a; false means ip was already taken.
	Reserve(a Attachment, ip netip.Addr) (bool, error)
	// Owner returns who holds ip, if anyone.
	Owner(ip netip.Addr) (Attachment, bool, error)
	// Release frees ip if and only if it is held by exactly a.
	Release(a Attachment, ip netip.Addr) (bool, error)
	// ByAttachment returns the addresses held by exactly a (legacy
	// reservations only for a with IfName == "").
	ByAttachment(a Attachment) ([]netip.Addr, error)
	// All returns every reservation, for GC.
	All() (map[netip.Addr]Attachment, error)
	// LastReserved is the round-robin cursor of range set rangeID (zero
	// Addr if none).
	LastReserved(rangeID int) (netip.Addr, error)
	// SetLastReserved moves that cursor.
	SetLastReserved(rangeID int, ip netip.Addr) error
	// SaveCursor returns range set rangeID's cursor as it is, for
	// RestoreCursor to put back exactly (a missing cursor included).
	SaveCursor(rangeID int) (Cursor, error)
	// RestoreCursor puts a saved cursor back.
	RestoreCursor(c Cursor) error
	// MarkExhausted records that an ADD found range set rangeID full.
	MarkExhausted(rangeID int) error
	// ClearExhausted forgets every exhaustion record, called whenever an
	// address is freed.
	ClearExhausted() error
}
