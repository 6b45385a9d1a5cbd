package ops

import (
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// LiveGCReport is what a reconcile found.
type LiveGCReport struct {
	// Stale are the reservations it takes from their owners (or would).
	Stale []LiveGCLease
	// Skipped counts, by network, the CNI reservations it left alone as
	// another network's; the key "" counts those whose network was never
	// recorded.
	Skipped map[string]int
}

// LiveGCLease is one reservation the reconcile releases (or would).
type LiveGCLease struct {
	Lease
	Age        time.Duration `json:"-"`
	AgeSeconds int64         `json:"ageSeconds"`
}

// LiveGC reconciles the reservations of this node against the runtime's
// own account of them (`gc --cri`, r.Runtime): it reads when each
// attachment's reservations were made (the Runtime's Reserved), then
// collects what the engine's keep set (alloc.NewRuntimeKeepSet) does not
// keep through b's GC, the CNI GC's own driver (a data dir's every state
// directory, or r.Node's claims in a shared store), which releases
// nothing a DEL or an ADD changed since it read it. Without Apply it
// only lists them.
func LiveGC(b Backend, r GCRequest) (LiveGCReport, error) {
	all, err := b.Leases(LeaseFilter{Node: r.Node})
	if err != nil {
		return LiveGCReport{}, err
	}
	rt := *r.Runtime
	rt.Reserved = map[alloc.Attachment]time.Time{}
	keep := alloc.NewRuntimeKeepSet(rt) // whose network a lease is does not depend on Reserved
	out := LiveGCReport{Stale: []LiveGCLease{}, Skipped: map[string]int{}}
	for _, l := range all {
		if k := l.owner().Key(); l.Since.After(rt.Reserved[k]) {
			rt.Reserved[k] = l.Since
		}
		if keep.Verdict(l.owner()) == alloc.KeptOtherNetwork {
			out.Skipped[l.Network]++
		}
	}
	r.Runtime = &rt
	gone, err := b.GC(r)
	for _, l := range gone {
		age := rt.Now.Sub(l.Since).Round(time.Second)
		out.Stale = append(out.Stale, LiveGCLease{Lease: l, Age: age, AgeSeconds: int64(age / time.Second)})
	}
	return out, err
}

// owner is the attachment l is the reservation of; a lease that is no
// attachment's reservation (a hold, a marker, a file that does not
// parse) has none.
func (l Lease) owner() alloc.Attachment {
	if l.Problem != "" || l.Owner != "cni" && l.Owner != "legacy" {
		return alloc.Attachment{}
	}
	return alloc.Attachment{ContainerID: l.ContainerID, IfName: l.IfName, Network: l.Network}
}
