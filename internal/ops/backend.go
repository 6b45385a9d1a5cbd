package ops

import (
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// Backend is the store of reservations that leases, release, gc,
// gc --cri and pools act on, chosen by the CLI once per command: Local,
// or with --etcd the full flavour's etcd backend. Only the full flavour's
// main names the latter, so the etcd client and net/http stay out of the
// lean binary. Every backend takes the same requests and returns Leases
// in the same form, so one printer and one set of checks serve them all.
type Backend interface {
	Leases(LeaseFilter) ([]Lease, error)
	// Release reads what an operator's release plans over, has the
	// engine plan it (alloc.PlanRelease) and, unless DryRun, applies the
	// plan: the read and the writes are the store's, the rule and the
	// report (Release, the function) every store's.
	Release(ReleaseRequest) (alloc.ReleasePlan, error)
	GC(GCRequest) ([]Lease, error)
	// States reads what pools counts in each scope, in order.
	States([]StateScope) ([]alloc.ScopeState, error)
	// Shared reports a store that many nodes share: its Leases carry
	// Node, requests may name one, and gc collects one node's claims
	// (which a local data dir, holding this host's only, has no use for).
	Shared() bool
}

// Local is the data dir on this host, read and written through the
// engine and its disk store exactly as the plugins do. It ignores the
// requests' Node fields.
type Local struct {
	DataDir string
	// LockTimeout is how long a writer waits for a state directory's lock.
	LockTimeout time.Duration
	// Now, when set, is the clock (nil: time.Now): what a release or a
	// GC turns into a hold is held from then, and expiry is judged by it.
	Now func() time.Time
}

func (b Local) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Shared is false: a data dir holds this host's reservations only.
func (Local) Shared() bool { return false }

// OwnerMarker is the owner kind of the marker an ADD writes in a shared
// Backend before it claims: left behind by an ADD that failed (until its
// DEL) or still running; its Address is "".
const OwnerMarker = "marker"
