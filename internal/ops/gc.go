package ops

import (
	"cmp"
	"errors"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
)

// GCRequest is a garbage collection by hand: the CNI GC command's rules
// (alloc.KeepSet) with the list of live attachments given by the
// operator.
type GCRequest struct {
	Location
	Keep []alloc.Attachment
	// Runtime, when set, is `gc --cri`'s account of what lives in place
	// of Keep (alloc.NewRuntimeKeepSet; LiveGC reads its Reserved): every
	// state directory is collected, or in a shared Backend Node's claims,
	// Node being this live host (no liveness guard, its fence buckets
	// stay).
	Runtime *alloc.Runtime
	Apply   bool
	// Node is a shared Backend's only and required there: the host whose
	// claims to collect (Network and Pool are then optional filters).
	Node string
	// DeadAfter (shared Backend, Apply): refuse while Node was seen alive
	// more recently than this, unless Force.
	DeadAfter time.Duration
	Force     bool
}

// GC returns the reservations the rules take from their owners: only
// planned without Apply (read without the lock, nothing changed), done
// with it by the CNI GC's own code (dapools.Collect, tenant records
// included). With --pool and --network both set, only the reservations
// recorded for that network are candidates, as in that network's CNI
// GC; with --pool alone, every network's are.
func (b Local) GC(r GCRequest) ([]Lease, error) {
	var keep alloc.KeepSet
	var dirs []StateScope
	var err error
	if r.Runtime == nil {
		keep = alloc.NewKeepSet(r.Network, r.Keep)
		var d StateScope
		d, err = b.existingDir(r.Location)
		dirs = []StateScope{d}
	} else {
		keep = alloc.NewRuntimeKeepSet(*r.Runtime)
		dirs, err = StateDirs(b.DataDir)
	}
	if err != nil {
		return nil, err
	}
	out := []Lease{}
	var errs []error
	for _, d := range dirs {
		// A pool's scope names no network: its reservations are judged
		// by the networks they record (r.Network's alone, when set).
		ls, err := b.collect(d, keep.In(cmp.Or(d.Network, r.Network)), r)
		out = append(out, ls...)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// collect is GC's work in one state directory. `gc` reports the
// addresses it frees; `gc --cri` every reservation it takes from a
// container, those that became a key's hold included.
func (b Local) collect(d StateScope, keep alloc.KeepSet, r GCRequest) ([]Lease, error) {
	now := b.now()
	var ls []Lease
	var v alloc.GCView
	read := func(alloc.Scope) (err error) {
		ls, v, err = readLeases(d)
		return err
	}
	var freed, held []netip.Addr
	var err error
	if r.Apply {
		// What it released is reported as read under the lock.
		freed, held, err = dapools.Collect(dapools.Collection{Place: dapools.Place{DataDir: b.DataDir, LockTimeout: b.LockTimeout}, Scopes: []alloc.Scope{d.Scope}, Keep: keep.Keeps, Now: now, Inspect: read})
	} else if err = read(d.Scope); err == nil {
		// The engine's plan over what is read without the lock: what
		// --apply does, in its order.
		p := alloc.PlanGC(v, keep.Keeps, now)
		freed, held = p.Freed(), p.Held()
	}
	if r.Runtime != nil {
		freed = append(freed, held...)
	}
	byAddr := map[string]Lease{}
	for _, l := range ls {
		byAddr[l.Address] = l
	}
	var out []Lease
	for _, ip := range freed {
		out = append(out, byAddr[ip.String()])
	}
	return out, err
}
