package etcdstore

import (
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// The store's tests drive it through the personality (internal/daetcd),
// which imports the store: they are package etcdstore_test, and this file
// lends them the internals they look at.

const (
	FenceBuckets = fenceBuckets
	StateDir     = stateDir
	MaxTxnOps    = maxTxnOps
)

var (
	DecodeHold   = decodeHold
	RemoveRecord = removeRecord
)

// FenceOf is the fence bucket key of attachment (cid, ifname) of node
// under prefix.
func FenceOf(prefix, node, cid, ifname string) string {
	return layout{prefix: prefix}.fenceOf(node, alloc.Attachment{ContainerID: cid, IfName: ifname})
}

// FenceKey is bucket b's key of node under prefix.
func FenceKey(prefix, node string, b int) string { return layout{prefix: prefix}.fenceKey(node, b) }

// NewTestOperation is an operation of node (on machine, host hostname)
// for attachment a at now, over cl and prefix.
func NewTestOperation(cl *etcdkv.Client, prefix, node, machine, hostname string, a alloc.Attachment, now time.Time) *Operation {
	return &Operation{cl: cl, keys: layout{prefix: prefix}, node: node, machine: machine, hostname: hostname,
		att: a, now: now, nonce: newClaimID()}
}

// Count is the tenant's count of quota q, as an ADD to targets reads it,
// and how many records it found counting nothing.
func (op *Operation) Count(q *pool.Quota, targets []alloc.Target) (n, stale int, err error) {
	qs := newQuotaState(q, targets)
	n, err = op.count(qs)
	return n, len(qs.stale), err
}

func (op *Operation) DeadTenantRecords() ([]etcdkv.Txn, error) {
	_, dead, err := op.tenantRecords()
	return dead, err
}

func (op *Operation) Apply(txns []etcdkv.Txn) error {
	_, err := op.apply(nil, txns)
	return err
}

func (op *Operation) Client() *etcdkv.Client { return op.cl }

func (op *Operation) VersionsRoot() string { return op.keys.versionsRoot() }

// SetNow makes the operator act at now.
func (o *Operator) SetNow(now time.Time) { o.op.now = now }

func (o *Operator) Client() *etcdkv.Client { return o.op.cl }

func (o *Operator) AddrKey(s alloc.Scope, ip netip.Addr) string { return o.op.keys.addrKey(s, ip) }

// GCKeeping applies the operator's GC of node's claims with keep as the
// keep rule: a test's keep runs between the driver's read and its writes.
func (o *Operator) GCKeeping(node string, keep func(alloc.Attachment) bool) ([]ops.Lease, error) {
	return o.op.collect(gcRun{node: node, index: []string{o.op.keys.nodePrefix(node)}, keep: keep}, false)
}
