package etcdstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// Operation is one CNI command against etcd: the client with its
// deadline, the key layout, and who is asking (node and machine, and the
// attachment when there is one).
type Operation struct {
	cl       *etcdkv.Client
	keys     layout
	conf     *alloc.Config // the CNI command's parsed config; nil for an operator's
	node     string
	machine  string // "" for an operator's command, which is no node's
	hostname string
	att      alloc.Attachment // who the command is for; zero for an operator's
	now      time.Time
	log      *logging.Logger
	quota    *quotaState // an ADD's tenant count (quota.go); nil: no quota
	nonce    string      // the value this operation's writes of fence buckets carry (fence.go)
}

// Open is how every command of the personality reaches etcd: ipam.etcd
// parsed from conf (the node name resolved), and the operation on
// behalf of attachment (containerID, ifname) of c's network, at now. It
// takes the request's parsed values rather than the request, so that the
// store needs nothing of how a CNI command arrives; its commands are
// those of ipamconf.Store.
func Open(conf *netconf.Envelope, c *alloc.Config, containerID, ifname string, now time.Time, log *logging.Logger) (*Operation, error) {
	e, err := parseEtcd(conf, true)
	if err != nil {
		return nil, err
	}
	machine, err := machineID(e.MachineIDFile)
	if err != nil {
		return nil, err
	}
	op, err := connect(e, now, log)
	if err != nil {
		return nil, err
	}
	op.conf, op.machine, op.att = c, machine, alloc.Attachment{ContainerID: containerID, IfName: ifname, Network: c.Network}
	op.hostname, _ = os.Hostname()
	return op, nil
}

// newClaimID names one ADD's claims (a claim found committed after its
// answer was lost is recognised by it), and is an operation's nonce. It
// must only differ from every other exec's, which the runtime's generator,
// seeded from the kernel at start, does without crypto/rand's first call
// (a getrandom state and a timer: some 50 µs of every exec).
func newClaimID() string { return fmt.Sprintf("%016x", rand.Uint64()) }

// recordOf is a's owner record, on this node, for an address of scope.
func (op *Operation) recordOf(a alloc.Attachment, s alloc.Scope, addr, claim string) Record {
	return Record{
		Node: op.node, ContainerID: a.ContainerID, IfName: a.IfName, Network: a.Network,
		Address: addr, Pool: s.Pool, Time: stamp(op.now), Claim: claim,
	}
}

// slotKey is this attachment's index key in scope.
func (op *Operation) slotKey(s alloc.Scope, slot int) string {
	return op.keys.slotKey(op.node, s, op.att.ContainerID, op.att.IfName, slot)
}

// readAttachment reads the attachment's index keys in each scope in one
// linearizable read: response i holds scope i's. With fence, the same
// round trip first writes the attachment's fence bucket (fence.go), which
// makes it a write: unconditional and idempotent in effect, so the client
// may send it again.
func (op *Operation) readAttachment(scopes []alloc.Scope, fence bool) (*etcdkv.Response, error) {
	reads := make([]etcdkv.Op, 0, len(scopes)+1)
	for _, s := range scopes {
		reads = append(reads, etcdkv.GetPrefix(op.keys.attachmentPrefix(op.node, s, op.att.ContainerID, op.att.IfName)))
	}
	if !fence {
		return op.cl.Read(reads...)
	}
	resp, err := op.cl.Txn(etcdkv.Txn{Then: append(reads, op.bumpOwn())})
	if err == nil {
		op.bumpedOwn(resp.Revision)
	}
	return resp, err
}

// release is the exact delete of one claim found through its index key
// kv, as the engine plans the DEL of its attachment in network ("" for
// any; alloc.PlanDel): the claim and the index key go, in one
// transaction, only while both are still as read, so a late copy of it
// can delete nothing a later ADD wrote. A failed ADD's marker (no
// address) just goes. The step is alloc.DelSkip for a claim the DEL
// leaves (no transaction then). The caller writes the attachment's fence
// bucket with it (fence.go), once per bucket in a batch. The same
// transaction records on mark, the range set's exhaustion mark (markOf),
// that an address was freed (see freed); with mark "", the caller does,
// once per mark.
func (op *Operation) release(s alloc.Scope, kv etcdkv.KV, network, mark string) (etcdkv.Txn, alloc.DelStep) {
	slotK := string(kv.Key)
	t := removeRecord(kv)
	r, ok := decodeRecord(kv.Value)
	if !ok {
		return t, alloc.DelFree // bytes that are no record hold nothing
	}
	a := r.attachment()
	a.Network = network
	p := op.planDel(a, r)
	ip, err := parseAddr(r.Address)
	if p.Step == alloc.DelSkip || r.cancelled() || r.Shares || err != nil {
		return t, p.Step // no claim of its own: a marker, a migration target's index key
	}
	// The claim was written in the transaction that wrote its index key
	// (and a sticky claim's hold key), so all carry one revision:
	// comparing it is as exact as comparing the value, and a tenth of the
	// bytes.
	addrK := op.keys.addrKey(s, ip)
	t.If = append(t.If, etcdkv.ModIs(addrK, kv.ModRevision))
	holdK := op.keys.holdKey(s, r.Hold, lastSegment(slotK))
	t.Then = append(t.Then, op.applyDel(p, addrK, holdK, []etcdkv.Cmp{etcdkv.ModIs(holdK, kv.ModRevision)}, mark)...)
	return t, p.Step
}

// planDel is the engine's plan for the DEL of a's claim r, over the hold
// the claim was written with (one owner's: a share is released through
// commitShared, which reads the hold).
func (op *Operation) planDel(a alloc.Attachment, r Record) alloc.DelPlan {
	return alloc.PlanDel(a, r.Node, alloc.DelView{Network: r.Network, Record: r.hold()}, op.now)
}

// applyDel is what plan p does to the claim at addrK once its index key
// goes: a hold puts the held record in the claim and the hold key while
// holdIf says the hold is still the one planned over, else p.Gone
// applies; a free deletes the claim and writes mark, when not "", freed.
func (op *Operation) applyDel(p alloc.DelPlan, addrK, holdK string, holdIf []etcdkv.Cmp, mark string) []etcdkv.Op {
	switch p.Step {
	case alloc.DelToHold:
		held := encodeHold(stamped(p.Hold, op.now))
		return []etcdkv.Op{etcdkv.Nested(etcdkv.Txn{
			If:   holdIf,
			Then: []etcdkv.Op{etcdkv.Put(addrK, held), etcdkv.Put(holdK, held)},
			Else: op.applyDel(alloc.DelPlan{Step: p.Gone}, addrK, holdK, nil, mark),
		})}
	case alloc.DelFree:
		if mark == "" {
			return []etcdkv.Op{etcdkv.Delete(addrK)}
		}
		return []etcdkv.Op{etcdkv.Delete(addrK), freed(mark)}
	}
	return nil
}

// apply sends txns, each nested with its own conditions, in as few
// transactions as fit beside extra (maxTxnOps), which each of them also
// carries (a batch's marks and fence buckets), inFlight at once, each
// only while guard holds (errNodeChanged otherwise), and answers whether
// each of txns applied, unless it fails. Every transaction here is exact
// (see release), so the client may send it again.
func (op *Operation) apply(guard []etcdkv.Cmp, txns []etcdkv.Txn, extra ...etcdkv.Op) ([]bool, error) {
	// etcd leaves a nested transaction what its parent did not use, so the
	// widest one bounds the batch too. A scope's marks are one per range
	// set (at most 64), so a batch always has room for releases.
	widest := 0
	for _, t := range txns {
		widest = max(widest, t.Budget())
	}
	room := max(1, maxTxnOps-len(extra)-widest)
	batches := slices.Collect(slices.Chunk(txns, room))
	applied, errs := make([]bool, len(txns)), make([]error, len(batches))
	send := func(cl *etcdkv.Client, w int) {
		for i := w; i < len(batches); i += inFlight {
			var then []etcdkv.Op
			for _, t := range batches[i] {
				then = append(then, etcdkv.Nested(t))
			}
			resp, err := cl.Txn(etcdkv.Txn{If: guard, Then: append(then, extra...)})
			if err == nil && !resp.Succeeded {
				err = errNodeChanged
			}
			for j := range batches[i] {
				applied[i*room+j] = err == nil && resp.Nested(j) != nil && resp.Nested(j).Succeeded
			}
			errs[i] = err
		}
	}
	// The first sender is the operation's own client, so that a single
	// batch (a DEL's) keeps what the client learns; the others are forks,
	// made before the first sends.
	var wg sync.WaitGroup
	for w := 1; w < min(inFlight, len(batches)); w++ {
		cl := op.cl.Fork()
		wg.Go(func() { send(cl, w) })
	}
	send(op.cl, 0)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err // what did apply is unknown: callers report the error
	}
	return applied, nil
}

// maxTxnOps is etcd's default --max-txn-ops: the widest part of a
// transaction (its comparisons, or a branch: a batch's nested releases and
// its marks together) and, for each nested one, what the outer part left.
const maxTxnOps = 128

// inFlight is how many batches are sent at once: etcd commits
// transactions that arrive together in one disk write, so a GC of tens of
// thousands of claims takes seconds, not a round trip and an fsync each.
const inFlight = 8

// errNodeChanged: a batch's guard failed, the node's record is no longer
// this machine's.
var errNodeChanged = errors.New("node record changed")
