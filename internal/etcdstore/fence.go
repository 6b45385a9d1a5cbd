package etcdstore

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
// So every claim also compares one of its node's fence buckets,
// fences/<node>/<b> (b a hash of the container ID and interface,
// fenceBuckets of them per node), with what the ADD knows of it, and every
// release writes that bucket in its own transaction (DEL in its first
// round trip, whatever it finds). The claim requires the bucket's mod
// revision and its value both as the ADD saw them: a revision is never
// used twice in a cluster, so no later write, not even a late copy of the
// write the ADD saw, restores them; and the value is a random nonce of the
// write, so a revision the host remembers from an earlier cluster under
// the same prefix (rebuilt, its revisions started over) cannot come round
// again with it. So a copy of a claim sent before a release fails
// however late etcd applies it, with no lease and no expiry. The buckets
// are all the state this costs: a fixed number of small keys per node,
// written at its registration, whatever the churn; no key per released
// attachment. An operator's `gc --etcd --node N --apply` of a node gone
// for good deletes them.
//
// What the ADD knows comes from what the host remembers between execs
// (etcdkv.Client.Remember, beside the failing members): a DEL remembers
// what its write made of the bucket, so the next ADD on the host claims in
// one round trip as before. A stale or unknown sight (another exec's
// release meanwhile, a reboot's empty tmpfs) only fails the comparison:
// the claim's else branch reads the node's buckets, and the ADD claims
// again with what it read (one round trip more).
//
// While the node has no record (its first claim registers it and writes
// its buckets) the claim requires the bucket absent: only a release of
// the attachment can have written it. A claim whose ADD knew nothing of a
// registered node's bucket requires it absent too; a copy of such a claim
// commits after a release only if the bucket was deleted meanwhile, which
// only `gc --etcd --node N --apply` does (docs/etcd.md, "Timeouts and late
// commits").
const fenceBuckets = 16

func (l layout) fencesPrefix(node string) string { return l.prefix + "fences/" + node + "/" }

func (l layout) fenceKey(node string, b int) string { return l.fencesPrefix(node) + strconv.Itoa(b) }

// fenceOf is the bucket key of an attachment of node: a hash of its
// container ID and interface, so every scope and network of one
// attachment shares it, and a DEL writes one key.
func (l layout) fenceOf(node, cid, ifname string) string {
	h := fnv.New32a()
	h.Write([]byte(cid))
	h.Write([]byte{0})
	h.Write([]byte(ifname))
	return l.fenceKey(node, int(h.Sum32()%fenceBuckets))
}

// fenceKey is the bucket of the operation's attachment.
func (op *Operation) fenceKey() string { return op.keys.fenceOf(op.node, op.cid, op.ifname) }

// bump is a release's write of the bucket of record r's attachment, with
// the operation's nonce. It is the same put whether or not the release
// happens, so a batch writes each bucket once (beside the exhaustion
// marks, see unmark), and a late copy of it costs at most a concurrent
// claim one retry.
func (op *Operation) bump(r Record) etcdkv.Op {
	return etcdkv.Put(op.keys.fenceOf(r.Node, r.ContainerID, r.IfName), []byte(op.nonce))
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

// createFences writes every bucket of the node: its registration does, so
// that a registered node's claims compare buckets that exist.
func (op *Operation) createFences() []etcdkv.Op {
	ops := make([]etcdkv.Op, fenceBuckets)
	for b := range ops {
		ops[b] = etcdkv.Put(op.keys.fenceKey(op.node, b), []byte(op.nonce))
	}
	return ops
}

// fencesCreated remembers the buckets registration wrote at rev.
func (op *Operation) fencesCreated(rev int64) {
	seen := make(map[string]etcdkv.Seen, fenceBuckets)
	for b := range fenceBuckets {
		seen[op.keys.fenceKey(op.node, b)] = etcdkv.Seen{Rev: rev, Value: op.nonce}
	}
	op.cl.Remember(seen)
}

// learnFences remembers the node's buckets as a read of its fences prefix
// found them (one missing: absent, the zero Seen).
func (op *Operation) learnFences(kvs []etcdkv.KV) {
	seen := make(map[string]etcdkv.Seen, fenceBuckets)
	for b := range fenceBuckets {
		seen[op.keys.fenceKey(op.node, b)] = etcdkv.Seen{}
	}
	for _, kv := range kvs {
		seen[string(kv.Key)] = etcdkv.Seen{Rev: kv.ModRevision, Value: string(kv.Value)}
	}
	op.cl.Remember(seen)
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
		op.learnFences(fences)
	}
	return moved
}
