package ops

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// DefaultMinAge is how old a reservation must be before `gc --cri` may
// release it: longer than any ADD in flight, whose sandbox the runtime
// does not list as ready until the ADD has returned.
const DefaultMinAge = 10 * time.Minute

// LiveGCRequest reconciles the reservations of this node against the
// runtime's own list of live sandboxes (`gc --cri`).
type LiveGCRequest struct {
	// Live holds the container IDs the runtime reports as ready sandboxes.
	Live   map[string]bool
	MinAge time.Duration
	Now    time.Time
	Apply  bool
	// Node, in a shared Backend, is the host whose claims alone are
	// candidates.
	Node string
	// Networks are the networks the runtime attaches its sandboxes to
	// (RuntimeNetworks of its conf dir, and any named by the operator).
	// Only their reservations are candidates: the runtime's list of live
	// sandboxes says nothing about another runtime's containers (podman,
	// Nomad, a second CRI runtime sharing the data dir), whose IDs it
	// never lists, so without this scope every one of them would look
	// leaked. Empty covers nothing.
	Networks map[string]bool
}

// LiveGCReport is what a reconcile found.
type LiveGCReport struct {
	// Stale are the reservations it releases (or would).
	Stale []LiveGCLease
	// Skipped counts, by network, the CNI reservations it left alone
	// because their network is not one of the request's Networks; the key
	// "" counts those whose network was never recorded (a pool
	// reservation written by host-local or an old version), which are
	// kept since nothing says which runtime made them.
	Skipped map[string]int
}

// LiveGCLease is one reservation the reconcile releases (or would).
type LiveGCLease struct {
	Lease
	Age        time.Duration `json:"-"`
	AgeSeconds int64         `json:"ageSeconds"`
	// Error says why releasing it failed; empty when it was released (or
	// in a dry run).
	Error string `json:"error,omitempty"`
}

// stale reports whether l is a CNI attachment's reservation that no live
// sandbox owns and that is older than the minimum age. Other owners (the
// Docker driver's "_docker", markers, files fsck must look at first) are
// never candidates.
func (r LiveGCRequest) stale(l Lease) bool {
	if !attachment(l) {
		return false
	}
	return !r.Live[l.ContainerID] && !l.Since.IsZero() && r.Now.Sub(l.Since) >= r.MinAge
}

// attachment reports whether l is a CNI attachment's reservation at all,
// the only kind a reconcile ever weighs.
func attachment(l Lease) bool {
	return l.Problem == "" && (l.Owner == "cni" || l.Owner == "legacy") && l.ContainerID != ""
}

// LiveGC releases every stale reservation of r's Networks in b (in
// every network directory and pool of a data dir, or among the node's
// claims in a shared store) through b's
// Release: only while the same attachment still holds it (under the
// directory's lock, or in a transaction comparing the owner), so a DEL
// or an ADD that got there first is never undone. Without Apply it only
// lists them. A release that fails is reported on its lease and makes
// the returned error non-nil; the others still go.
func LiveGC(b Backend, r LiveGCRequest) (LiveGCReport, error) {
	all, err := b.Leases(LeaseFilter{Node: r.Node})
	if err != nil {
		return LiveGCReport{}, err
	}
	out := LiveGCReport{Stale: []LiveGCLease{}, Skipped: map[string]int{}}
	var failed []error
	for _, l := range all {
		// A pool's directory holds every network's reservations that
		// select it, so the scope is the recorded network, never the
		// directory: a reservation recording none ("") is kept.
		if attachment(l) && (l.Network == "" || !r.Networks[l.Network]) {
			out.Skipped[l.Network]++
			continue
		}
		if !r.stale(l) {
			continue
		}
		age := r.Now.Sub(l.Since).Round(time.Second)
		g := LiveGCLease{Lease: l, Age: age, AgeSeconds: int64(age / time.Second)}
		if r.Apply {
			if err := r.release(b, l); err != nil {
				g.Error = err.Error()
				failed = append(failed, fmt.Errorf("%s: %w", l.Describe(), err))
			}
		}
		out.Stale = append(out.Stale, g)
	}
	return out, errors.Join(failed...)
}

func (r LiveGCRequest) release(b Backend, l Lease) error {
	addr, err := netip.ParseAddr(l.Address)
	if err != nil {
		return err
	}
	req := ReleaseRequest{Location: Location{Pool: l.Pool}, Addr: addr, Container: l.ContainerID, IfName: l.IfName, Node: r.Node}
	if l.Pool == "" {
		req.Network = l.Network
	}
	_, err = b.Release(req)
	return err
}
