package etcdstore

import (
	"hash/fnv"
	"strconv"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// Fence buckets (docs/etcd.md, "Timeouts and late commits"): a claim's
// condition that its keys are absent is true again after a release, so
// every claim also compares its attachment's bucket, fences/<node>/<b>,
// at the revision and nonce this host remembers (etcdkv.Client.Remember),
// and every release writes it: a copy of a claim sent before a release
// fails however late etcd applies it.
const fenceBuckets = 16

func (l layout) fencesPrefix(node string) string { return l.prefix + "fences/" + node + "/" }

func (l layout) fenceKey(node string, b int) string { return l.fencesPrefix(node) + strconv.Itoa(b) }

// fenceOf is the bucket key of an attachment of node: a hash of its
// container ID and interface, so every scope and network of one
// attachment shares it, and a DEL writes one key.
func (l layout) fenceOf(node string, a alloc.Attachment) string {
	h := fnv.New32a()
	h.Write([]byte(a.ContainerID))
	h.Write([]byte{0})
	h.Write([]byte(a.IfName))
	return l.fenceKey(node, int(h.Sum32()%fenceBuckets))
}

// fenceKey is the bucket of the operation's attachment.
func (op *Operation) fenceKey() string { return op.keys.fenceOf(op.node, op.att) }

// bump is a release's write of the bucket of record r's attachment, with
// the operation's nonce. It is the same put whether or not the release
// happens, so a batch writes each bucket once (beside the exhaustion
// marks, see unmark), and a late copy of it costs at most a concurrent
// claim one retry.
func (op *Operation) bump(r Record) etcdkv.Op {
	return etcdkv.Put(op.keys.fenceOf(r.Node, r.attachment()), []byte(op.nonce))
}

// bumpOwn is bump for the operation's own attachment, remembered at rev
// once the write is known to have happened there.
func (op *Operation) bumpOwn() etcdkv.Op { return etcdkv.Put(op.fenceKey(), []byte(op.nonce)) }

func (op *Operation) bumpedOwn(rev int64) {
	op.cl.Remember(map[string]etcdkv.Seen{op.fenceKey(): {Rev: rev, Value: op.nonce}})
}

// fenceCmp is a claim's condition on its bucket once the node is
// registered: at the revision and value this host last saw it at, or
// absent when it knows nothing (see above).
func (op *Operation) fenceCmp(key string) []etcdkv.Cmp {
	seen := op.cl.Recall(key)
	if seen.Rev == 0 {
		return []etcdkv.Cmp{etcdkv.ModIs(key, 0)}
	}
	return []etcdkv.Cmp{etcdkv.ModIs(key, seen.Rev), etcdkv.ValueIs(key, []byte(seen.Value))}
}

// rememberFences remembers every bucket of the node as seen, but those
// in kvs, as a read of its fences prefix found them: registration wrote
// them all at one revision, a read that misses one found it absent (the
// zero Seen).
func (op *Operation) rememberFences(seen etcdkv.Seen, kvs []etcdkv.KV) {
	m := make(map[string]etcdkv.Seen, fenceBuckets)
	for b := range fenceBuckets {
		m[op.keys.fenceKey(op.node, b)] = seen
	}
	for _, kv := range kvs {
		m[string(kv.Key)] = etcdkv.Seen{Rev: kv.ModRevision, Value: string(kv.Value)}
	}
	op.cl.Remember(m)
}

// fenceRefused reports a claim refused because its bucket fenceK, as its
// answer read the node's buckets (fences), is no longer as this host saw
// it: a release wrote it since (or this exec knew nothing of it), and the
// claim goes again at the revision read. The host learns it, unless the
// claim registered the node, which wrote every bucket after the read.
func (op *Operation) fenceRefused(fences []etcdkv.KV, fenceK string, registeredNow bool) bool {
	seen := op.cl.Recall(fenceK)
	moved := seen.Rev != 0
	for _, kv := range fences {
		if string(kv.Key) == fenceK {
			moved = kv.ModRevision != seen.Rev || string(kv.Value) != seen.Value
		}
	}
	if moved && !registeredNow {
		op.rememberFences(etcdkv.Seen{}, fences)
	}
	return moved
}
