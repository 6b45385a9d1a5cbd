package daetcd

import (
	"errors"
	"net/netip"
	"slices"
	"sync"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdGC (spec 1.1) releases this node's claims of this network whose
// attachment is not in cni.dev/valid-attachments (alloc.KeepSet, the
// rule every GC follows), failed ADDs' markers included, writing their
// fence buckets as DEL does (fence.go). It reads this node's index keys of each scope,
// page by page, so another node's claims are never even looked at, and it
// frees nothing unless the node is this machine (node.go). Then it removes
// the tenant records that count nothing, every tenant's (tenantgc.go). It
// keeps going after errors.
func cmdGC(req *plugin.Request) error {
	c, op, err := begin(req, false) // GC has no attachment: op's is empty
	if err != nil {
		return err
	}
	valid, err := alloc.ValidAttachments(req.Conf)
	if err != nil {
		return err
	}
	return op.gc(c.Scopes(), alloc.NewKeepSet(op.network, valid))
}

// gc releases this node's claims of the operation's network in scopes
// that keep rejects, fencing them, and the network's expired holds
// there; then it sweeps the tenant records, so that those of the claims
// it just released go too.
func (op *operation) gc(scopes []alloc.Scope, keep alloc.KeepSet) error {
	node, err := op.cl.Read(etcdkv.Get(op.keys.nodeKey(op.node)))
	if err != nil {
		return err
	}
	kv, found := node.First(0)
	if err := op.ensureNode(kv, found); err != nil {
		return err
	}
	err = op.collect(scopes, keep)
	return errors.Join(err, op.sweepTenants())
}

// collect is gc's releases, as alloc.PlanClaim decides each claim, each
// batch writing the fence buckets of the attachments it releases
// (fence.go); then the expired holds.
func (op *operation) collect(scopes []alloc.Scope, keep alloc.KeepSet) error {
	var errs []error
	for _, s := range scopes {
		kvs, err := op.cl.List(op.keys.nodeScope(op.node, s), false)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sg := scopeGC{marks: unmark{}}
		for _, kv := range kvs {
			r, ok := decodeRecord(kv.Value)
			if !ok || r.released() || r.Network != op.network {
				continue
			}
			switch alloc.PlanClaim(r.attachment(), false, r.sharing(), keep.Keeps) {
			case alloc.ClaimShareEnds:
				errs = append(errs, op.gcShared(s, kv, r, op.network))
			case alloc.ClaimReleased:
				sg.release(op, s, kv, r, op.network)
				op.log.Info("gc releases", logging.String("address", r.Address), logging.String("containerID", r.ContainerID), logging.String("ifname", r.IfName))
			}
		}
		errs = append(errs, op.commitBatches(sg.txns, sg.marks, op.sameMachine()...))
		// Expired holds go whichever node held them last: no node guard.
		holds := scopeGC{marks: unmark{}}
		_, err = op.expiredHolds(s, op.network, &holds)
		errs = append(errs, err, op.commitBatches(holds.txns, holds.marks))
	}
	return errors.Join(errs...)
}

// gcShared is a GC's release of the sharing record r, found through
// index key kv, for network ("" for any). Both owners of a migration may
// go in one GC: the first one's release rewrites the other's keys (hands
// it the address, or ends its share), so the other's release, planned
// from the listing, finds them changed. It then reads the index key
// again and releases the record it now holds, as the engine plans for a
// claim no GC keeps (the attachment is the same): a sole owner's, into
// its key's hold. Bounded as DEL's reads are.
func (op *operation) gcShared(s alloc.Scope, kv etcdkv.KV, r Record, network string) error {
	err := op.commitShared(s, kv, r, network)
	for try := 1; errors.Is(err, errReleaseRaced) && try < maxReleaseRaces; try++ {
		resp, rerr := op.cl.Read(etcdkv.Get(string(kv.Key)))
		if rerr != nil {
			return rerr
		}
		cur, found := resp.First(0)
		rec, ok := decodeRecord(cur.Value)
		switch {
		case !found || !ok || rec.released():
			return nil // released meanwhile: nothing is left to do
		case rec.sharing():
			err = op.commitShared(s, cur, rec, network)
		default:
			sg := scopeGC{marks: unmark{}}
			sg.release(op, s, cur, rec, network)
			err = op.commitBatches(sg.txns, sg.marks)
		}
	}
	return err
}

// expiredHolds adds to sg the release of the holds of network in scope s
// (every network's when "") that alloc.HoldEnds ends, and returns them:
// each hold key and its address's claim go at the revision the release
// wrote them (expireHold), so a hold taken over meanwhile is kept.
func (op *operation) expiredHolds(s alloc.Scope, network string, sg *scopeGC) ([]holdLease, error) {
	kvs, err := op.cl.List(op.keys.holdScope(s), false)
	if err != nil {
		return nil, err
	}
	var plan []holdLease
	for _, kv := range kvs {
		h, ok := decodeHold(kv.Value)
		if !ok || !alloc.HoldEnds(h, network, op.now) {
			continue
		}
		ip, _ := netip.ParseAddr(h.Address)
		sg.txns = append(sg.txns, expireHold(string(kv.Key), op.keys.addrKey(s, ip), kv.ModRevision, ""))
		sg.marks[op.keys.fullScope(s)+lastSegment(string(kv.Key))] = nil
		plan = append(plan, holdLease{h: h, scope: s, kv: kv})
		op.log.Info("gc frees an expired hold", logging.String("address", h.Address), logging.String("key", h.Key))
	}
	return plan, nil
}

// maxTxnOps is etcd's default --max-txn-ops: the widest part of a
// transaction (its comparisons, or a branch: a batch's nested releases and
// its marks together) and, for each nested one, what the outer part left.
const maxTxnOps = 128

// inFlight is how many batches are sent at once: etcd commits
// transactions that arrive together in one disk write, so a GC of tens of
// thousands of claims takes seconds, not a round trip and an fsync each.
const inFlight = 8

// commitBatches releases in transactions of as many claims as fit beside
// the marks (maxTxnOps), each also marking the range sets freed, each
// only while the conditions in guard hold.
func (op *operation) commitBatches(txns []etcdkv.Txn, marks unmark, guard ...etcdkv.Cmp) error {
	var batches []etcdkv.Txn
	markOps := marks.ops()
	// etcd leaves a nested transaction what its parent did not use, so the
	// widest release bounds the batch too. A scope's marks are one per
	// range set (at most 64), so a batch always has room for releases.
	widest := 0
	for _, t := range txns {
		widest = max(widest, t.Budget())
	}
	room := max(1, maxTxnOps-len(markOps)-widest)
	for len(txns) > 0 {
		n := min(len(txns), room)
		batch := etcdkv.Txn{If: guard}
		for _, t := range txns[:n] {
			batch.Then = append(batch.Then, etcdkv.Nested(t))
		}
		batches = append(batches, etcdkv.Txn{If: batch.If, Then: append(batch.Then, markOps...)})
		txns = txns[n:]
	}
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for w := range min(inFlight, len(batches)) {
		cl := op.cl.Fork()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(batches); i += inFlight {
				resp, err := cl.Txn(batches[i])
				if err == nil && !resp.Succeeded {
					err = errNodeChanged
				}
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if slices.Contains(errs, errNodeChanged) {
		return op.register() // says whose the node is now
	}
	return errors.Join(errs...)
}

// errNodeChanged: a batch's guard failed, the node's record is no longer
// this machine's.
var errNodeChanged = errors.New("node record changed")
