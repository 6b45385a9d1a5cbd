package daetcd

import (
	"hash/fnv"
	"strconv"

	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// A claim's condition is that its keys are absent (or that the index key
// is still the marker it takes over). A release makes them absent again,
// so on that condition alone a copy of a claim that etcd applied after
// the attachment's DEL (a member stopped with the request in its socket, a
// copy held on the network) would claim an address for a container that
// no longer exists.
//
// So every claim also compares the mod revision of one of its node's
// fence buckets, fences/<node>/<b> (b a hash of the container ID and
// interface, fenceBuckets of them per node), with the revision the ADD
// knows, and every release writes that bucket in its own transaction (DEL
// in its first round trip, whatever it finds). A mod revision only ever
// grows, so a copy of a claim sent before a release carries a revision
// that is gone for good: it fails however late etcd applies it, with no
// lease and no expiry. The buckets are all the state this costs: a fixed
// number of empty keys per node, written at its registration, whatever
// the churn; no key per released attachment. An operator's `gc --etcd
// --node N --apply` of a node gone for good deletes them.
//
// The revision an ADD knows comes from what the host remembers between
// execs (etcdkv.Client.Remember, beside the failing members): a DEL
// remembers the revision its write gave the bucket, so the next ADD on the
// host claims in one round trip as before. A stale or unknown revision
// (another exec's release meanwhile, a reboot's empty tmpfs) only fails
// the comparison: the claim's else branch reads the node's buckets, and
// the ADD claims again with what it read (one round trip more).
//
// A claim whose ADD knew no revision compares 0, which holds only while
// the bucket is absent: a new node's first claim, which registers the
// node and writes its buckets in the same transaction. A copy of such a
// claim commits after a release only if the bucket was deleted meanwhile,
// which only `gc --etcd --node N --apply` does (docs/etcd.md, "Timeouts
// and late commits").
const fenceBuckets = 16

// bucketOf is the fence bucket of a container and interface: every scope
// and network of one attachment shares it, so a DEL writes one key.
func bucketOf(cid, ifname string) int {
	h := fnv.New32a()
	h.Write([]byte(cid))
	h.Write([]byte{0})
	h.Write([]byte(ifname))
	return int(h.Sum32() % fenceBuckets)
}

func (l layout) fencesPrefix(node string) string { return l.prefix + "fences/" + node + "/" }

func (l layout) fenceKey(node string, b int) string { return l.fencesPrefix(node) + strconv.Itoa(b) }

// fenceOf is the bucket key of an attachment of node.
func (l layout) fenceOf(node, cid, ifname string) string {
	return l.fenceKey(node, bucketOf(cid, ifname))
}

// fenceKey is the bucket of the operation's attachment.
func (op *operation) fenceKey() string { return op.keys.fenceOf(op.node, op.cid, op.ifname) }

// bump is a release's write of the bucket of record r's attachment. It is
// the same empty put whether or not the release happens, so a batch
// writes each bucket once (as it does exhaustion marks, see unmark), and
// a late copy of it costs at most a concurrent claim one retry.
func (l layout) bump(r Record) etcdkv.Op {
	return etcdkv.Put(l.fenceOf(r.Node, r.ContainerID, r.IfName), nil)
}

// fenceCmp is a claim's condition on its bucket: still at the revision
// this host last saw it at (0: absent, see above).
func (op *operation) fenceCmp(key string) etcdkv.Cmp { return etcdkv.ModIs(key, op.cl.Revision(key)) }

// createFences writes every bucket of the node: its registration does, so
// that a registered node's claims never compare an absent bucket.
func (op *operation) createFences() []etcdkv.Op {
	ops := make([]etcdkv.Op, fenceBuckets)
	for b := range ops {
		ops[b] = etcdkv.Put(op.keys.fenceKey(op.node, b), nil)
	}
	return ops
}

// fencesCreated remembers the buckets registration wrote at rev.
func (op *operation) fencesCreated(rev int64) {
	revs := make(map[string]int64, fenceBuckets)
	for b := range fenceBuckets {
		revs[op.keys.fenceKey(op.node, b)] = rev
	}
	op.cl.Remember(revs)
}

// learnFences remembers the node's buckets as a read of its fences prefix
// found them (one missing is remembered as 0, absent).
func (op *operation) learnFences(kvs []etcdkv.KV) {
	revs := make(map[string]int64, fenceBuckets)
	for b := range fenceBuckets {
		revs[op.keys.fenceKey(op.node, b)] = 0
	}
	for _, kv := range kvs {
		revs[string(kv.Key)] = kv.ModRevision
	}
	op.cl.Remember(revs)
}
