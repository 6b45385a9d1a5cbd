package alloc

import "net/netip"

// Store is what Allocate needs of the place addresses are kept: claim
// one, know where the search starts, and record that a range set is full.
// Every call happens inside one operation that the store keeps exclusive
// (a directory lock, a transaction per claim), so the allocator does no
// locking of its own.
//
// A Store that is not also a Ledger has no round-robin cursor, and its
// Reserve reports an attachment that already holds an address of the
// range set (an *AttachedFound, checked atomically with the claim), for
// the engine to answer 102: Allocate's duplicate check needs a Ledger.
type Store interface {
	// Reserve records ip for a; false means ip was already taken.
	Reserve(a Attachment, ip netip.Addr) (bool, error)
	// LastReserved is where the search of range set rangeID starts
	// after (host-local's cursor; zero Addr to start at the beginning).
	LastReserved(rangeID int) (netip.Addr, error)
	// MarkExhausted records, for STATUS, that an ADD found range set
	// rangeID full.
	MarkExhausted(rangeID int) error
}

// Ledger is a Store that keeps every reservation where the engine can
// read and free it, with host-local's round-robin cursor: what DEL, CHECK,
// an ADD's rollback and the Docker driver work on. Allocate, given a
// Ledger, checks duplicates and moves the cursor itself.
type Ledger interface {
	Store
	// Owner returns who reserved ip, if anyone.
	Owner(ip netip.Addr) (Attachment, bool, error)
	// Release frees ip if and only if it is reserved by exactly a.
	Release(a Attachment, ip netip.Addr) (bool, error)
	// ByAttachment returns the addresses reserved by exactly a (legacy
	// reservations only for a with IfName == "").
	ByAttachment(a Attachment) ([]netip.Addr, error)
	// SetLastReserved moves the cursor of range set rangeID.
	SetLastReserved(rangeID int, ip netip.Addr) error
	// ClearExhausted forgets every exhaustion record, called whenever an
	// address is freed.
	ClearExhausted() error
}

// Lister is a Ledger that can list every reservation it keeps: GC's
// input. A store that reads its owners some narrower way (by node, by
// attachment) collects garbage without the engine.
type Lister interface {
	Ledger
	// All returns every reservation.
	All() (map[netip.Addr]Attachment, error)
}
