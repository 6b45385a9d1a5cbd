package etcdstore

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// GC (spec 1.1) releases this node's claims of this network in the
// config's scopes whose attachment is not in valid (cni.dev/valid-attachments;
// alloc.KeepSet, the rule every GC follows), failed ADDs' markers
// included, fencing them as DEL does (fence.go), and the network's
// expired holds there. It reads only this node's index keys of each scope
// (alloc.PlanClaims keeps every other node's claims), and it frees nothing
// unless the node is this machine (node.go). Then it removes the tenant
// records that count nothing, every tenant's, those of the claims it just
// released included (tenantgc.go). It keeps going after errors.
func (op *Operation) GC(valid []alloc.Attachment) error {
	node, err := op.cl.Read(etcdkv.Get(op.keys.nodeKey(op.node)))
	if err != nil {
		return err
	}
	if err := op.ensureNode(node, 0); err != nil {
		return err
	}
	run := gcRun{node: op.node, network: op.att.Network, keep: alloc.NewKeepSet(op.att.Network, valid).Keeps, guard: op.sameMachine()}
	for _, s := range op.conf.Scopes() {
		run.index, run.holds = append(run.index, op.keys.nodeScope(op.node, s)), append(run.holds, op.keys.holdScope(s))
	}
	_, err = op.collect(run, false)
	return errors.Join(err, op.sweepTenants())
}

// read lists the run's index keys, page by page (a GC's: its node's
// alone, as reading the claims alloc.PlanClaims keeps would be wasted),
// and the hold keys, as the engine's view of the scope each key names. It
// keeps going after errors.
func (op *Operation) read(run gcRun) (map[alloc.Scope]*alloc.ClaimsView, error) {
	read := map[alloc.Scope]*alloc.ClaimsView{}
	var errs []error
	for kind, prefixes := range [2][]string{run.index, run.holds} {
		for _, prefix := range prefixes {
			kvs, err := op.cl.List(prefix, false)
			errs = append(errs, err)
			for _, kv := range kvs {
				s, _, ok := op.keys.scopeIn(string(kv.Key))
				if !ok || (run.pool != "" && s.Pool != run.pool) {
					continue
				}
				if read[s] == nil {
					read[s] = &alloc.ClaimsView{Network: run.network, Node: run.node}
				}
				if h, ok := decodeHold(kv.Value); kind == 1 && ok {
					read[s].Holds = append(read[s].Holds, alloc.GCHold{Hold: h, Ref: kv})
				} else if kind == 0 {
					read[s].Claims = append(read[s].Claims, gcClaims(kv)...)
				}
			}
		}
	}
	return read, errors.Join(errs...)
}

// gcClaims are the claims index keys kvs name, as the engine sees them:
// an earlier version's fences and bytes that are no record hold nothing.
func gcClaims(kvs ...etcdkv.KV) []alloc.GCClaim {
	var out []alloc.GCClaim
	for _, kv := range kvs {
		if r, ok := decodeRecord(kv.Value); ok && !r.Released {
			out = append(out, alloc.GCClaim{Owner: r.attachment(), Node: r.Node, Shared: r.sharing(), Ref: kv})
		}
	}
	return out
}

// gcRun is one GC of one node's claims: the CNI GC's (this machine's
// node, one network, the config's scopes) or an operator's (`gc --etcd`:
// a gone node, every network or one, every scope or one pool). They
// differ only in what they read (the prefixes of index and hold keys),
// what keep keeps, and the guard of each batch of releases (the CNI
// GC's: the node is still this machine's, node.go); expired holds go
// whichever node held them last, unguarded.
type gcRun struct {
	node          string // the GC's node: alloc.PlanClaims keeps every other node's claims
	network, pool string // "" for every one
	index, holds  []string
	keep          func(alloc.Attachment) bool
	guard         []etcdkv.Cmp
}

// collect is the one GC driver: it reads, the engine plans each scope
// (alloc.PlanClaims), and, unless dryRun, each plan is applied
// (applyGC). It returns the plan: the claims sorted by ops.SortLeases,
// then the holds in scope order. It keeps going after errors.
func (op *Operation) collect(run gcRun, dryRun bool) ([]ops.Lease, error) {
	var claims, holds []ops.Lease
	read, err := op.read(run)
	errs := []error{err}
	for _, s := range slices.SortedFunc(maps.Keys(read), func(x, y alloc.Scope) int { return strings.Compare(x.Path(), y.Path()) }) {
		p := alloc.PlanClaims(*read[s], run.keep, op.now)
		claims = append(claims, leasesOf(s, append(p.EndShare, p.Release...))...)
		for _, h := range p.Expire {
			holds = append(holds, heldLease(h.Hold, s))
		}
		if !dryRun {
			errs = append(errs, op.applyGC(run, s, p, 1))
		}
	}
	ops.SortLeases(claims)
	return append(claims, holds...), errors.Join(errs...)
}

// applyGC applies plan p of scope s (try: gcShared's): the shares
// first, each on its own (gcShared), then the releases and the expiries
// in batches, each writing the marks of the range sets it frees and the
// fence buckets of the attachments it releases (fence.go).
func (op *Operation) applyGC(run gcRun, s alloc.Scope, p alloc.ClaimsPlan, try int) error {
	var errs []error
	for _, c := range p.EndShare {
		errs = append(errs, op.gcShared(run, s, c.Ref.(etcdkv.KV), try))
	}
	// Each scope's batches carry that scope's marks only: a batch carrying
	// every scope's would pass etcd's --max-txn-ops once a cluster has a
	// few pools to clean.
	var released []etcdkv.Txn
	var expired []etcdkv.KV
	marks := unmark{}
	for _, c := range p.Release {
		kv := c.Ref.(etcdkv.KV)
		r, _ := decodeRecord(kv.Value)
		t, _ := op.release(s, kv, run.network, "")
		released = append(released, t)
		marks[op.keys.markOf(s, string(kv.Key))] = nil
		marks[op.keys.fenceOf(r.Node, r.attachment())] = []byte(op.nonce) // see bump
		op.log.Info("gc releases", logging.String("address", r.Address), logging.String("containerID", r.ContainerID), logging.String("ifname", r.IfName))
	}
	for _, h := range p.Expire {
		expired = append(expired, h.Ref.(etcdkv.KV))
		op.log.Info("gc frees an expired hold", logging.String("address", h.Address), logging.String("key", h.Key))
	}
	_, err := op.apply(run.guard, released, marks.ops()...)
	if errors.Is(err, errNodeChanged) {
		err = op.register() // says whose the node is now
	}
	_, expErr := op.expire(s, expired)
	return errors.Join(append(errs, err, expErr)...)
}

// gcShared ends the share of the claim found through index key kv, as
// its DEL would, at its try-th attempt. Both owners of a migration may go
// in one GC: the first one's release rewrites the other's keys (hands it
// the address, or ends its share), so the other's, planned from the
// listing, finds them changed. It then reads the index key again and
// applies what the engine plans for it now (a sole owner's claim is
// released, into its key's hold). Bounded as DEL's reads are.
func (op *Operation) gcShared(run gcRun, s alloc.Scope, kv etcdkv.KV, try int) error {
	err := op.commitShared(s, kv, run.network)
	if !errors.Is(err, errReleaseRaced) || try == maxReleaseRaces {
		return err
	}
	resp, err := op.cl.Read(etcdkv.Get(string(kv.Key)))
	if err != nil {
		return err
	}
	p := alloc.PlanClaims(alloc.ClaimsView{Network: run.network, Node: run.node, Claims: gcClaims(resp.KVs(0)...)}, run.keep, op.now)
	return op.applyGC(run, s, p, try+1)
}
