package etcdstore

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// Node identity (docs/etcd.md, "Node identity"): two machines under one
// node name would free each other's claims in GC, so the node's record
// (nodes/<node>) holds its machine's identity, which every ADD, DEL, GC and
// STATUS checks in the transaction that does its work, and the time it
// was last seen, which `gc --etcd --node N` reads.

// nodeRecord is the value of nodes/<node>. Its fields are in this order on
// purpose: records of one machine sort by the time they were written.
type nodeRecord struct {
	Machine  string `json:"machine"`
	Seen     string `json:"seen"`
	Hostname string `json:"hostname"`
}

// decodeNode is a node's record and when it was last seen (zero: never,
// or unreadable).
func decodeNode(b []byte) (r nodeRecord, seen time.Time) {
	_ = json.Unmarshal(b, &r)
	seen, _ = time.Parse(time.RFC3339, r.Seen)
	return r, seen
}

// stampFormat is how records carry time: fixed width, so that byte order
// is time order (etcd compares values byte by byte).
const stampFormat = "2006-01-02T15:04:05.000000000Z"

func stamp(t time.Time) string { return t.UTC().Format(stampFormat) }

// touchEvery: STATUS, a read, writes the node's last-seen time only when
// it is older than this.
const touchEvery = time.Minute

// machineID is the machine's identity as stored in etcd: a keyed hash of
// its machine-id (which systemd asks never to publish as it is), or of
// the file ipam.etcd.machineIDFile names.
func machineID(file string) (string, error) {
	files := []string{file}
	if file == "" {
		files = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if id := strings.TrimSpace(string(b)); err == nil && id != "" {
			mac := hmac.New(sha256.New, []byte("cniplugins ipam-da-etcd node identity"))
			mac.Write([]byte(id))
			return hex.EncodeToString(mac.Sum(nil)[:16]), nil
		}
	}
	if file != "" {
		return "", cnierr.InvalidConfig("ipam.etcd.machineIDFile", file, "cannot be read or is empty")
	}
	return "", cnierr.New(cnierr.CodeInvalidConfig, "this machine has no machine-id",
		"/etc/machine-id and /var/lib/dbus/machine-id are missing or empty: run systemd-machine-id-setup, or name a file holding a stable ID unique to this machine in ipam.etcd.machineIDFile")
}

// identity is how this machine's node record begins.
func (op *Operation) identity() []byte {
	b, _ := json.Marshal(nodeRecord{Machine: op.machine})
	return b[:bytes.Index(b, []byte(`"seen":"`))+len(`"seen":"`)]
}

func (op *Operation) nodeRecord() []byte {
	b, _ := json.Marshal(nodeRecord{Machine: op.machine, Seen: stamp(op.now), Hostname: op.hostname})
	return b
}

// sameMachine holds while the node's record is this machine's.
func (op *Operation) sameMachine() []etcdkv.Cmp {
	id := op.identity()
	k := op.keys.nodeKey(op.node)
	return []etcdkv.Cmp{etcdkv.ValueAbove(k, id), etcdkv.ValueBelow(k, append(id, 0xff))}
}

// touch moves the node's last-seen time forward, never back: a late copy
// of an older command cannot undo a newer one's.
func (op *Operation) touch() etcdkv.Op {
	k, rec := op.keys.nodeKey(op.node), op.nodeRecord()
	return etcdkv.Nested(etcdkv.Txn{
		If:   []etcdkv.Cmp{etcdkv.ValueAbove(k, op.identity()), etcdkv.ValueBelow(k, rec)},
		Then: []etcdkv.Op{etcdkv.Put(k, rec)},
	})
}

// checkNode refuses a node record, as read, that is another machine's,
// naming both.
func (op *Operation) checkNode(kv etcdkv.KV) error {
	if bytes.HasPrefix(kv.Value, op.identity()) {
		return nil
	}
	other, _ := decodeNode(kv.Value)
	return cnierr.New(cnierr.CodeInvalidConfig, "another machine uses this node name",
		"ipam.etcd.nodeName=%q: etcd holds it for machine %s (host %q, last seen %s); this is machine %s (host %q): give each machine its own nodeName (two machines under one name would free each other's addresses)",
		op.node, other.Machine, other.Hostname, other.Seen, op.machine, op.hostname)
}

// register stores this machine's identity for the node if it has none,
// and checks it otherwise.
func (op *Operation) register() error {
	resp, err := op.cl.Txn(op.registering(nil, etcdkv.Get(op.keys.nodeKey(op.node))))
	if err != nil || op.registered(resp) {
		return err
	}
	kv, _ := resp.First(0)
	return op.checkNode(kv)
}

// registering is a transaction that, while the node has no record,
// writes it, then then, then every fence bucket of the node, so that a
// registered node's claims compare buckets that exist (fence.go); else
// it does els. The buckets come after then: etcd compares every
// condition of a transaction before it writes anything, and a simple
// store (the tests' fake) as it goes; this order means the same to both.
func (op *Operation) registering(then []etcdkv.Op, els ...etcdkv.Op) etcdkv.Txn {
	k := op.keys.nodeKey(op.node)
	t := etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.Absent(k)}, Then: append([]etcdkv.Op{etcdkv.Put(k, op.nodeRecord())}, then...), Else: els}
	for b := range fenceBuckets {
		t.Then = append(t.Then, etcdkv.Put(op.keys.fenceKey(op.node, b), []byte(op.nonce)))
	}
	return t
}

// registered reports whether a registering transaction registered the
// node, remembering the buckets it wrote when it did.
func (op *Operation) registered(resp *etcdkv.Response) bool {
	if resp.Succeeded {
		op.rememberFences(etcdkv.Seen{Rev: resp.Revision, Value: op.nonce}, nil)
	}
	return resp.Succeeded
}

// ensureNode checks the node's record as read at i of resp, registering
// it when absent; an STATUS-like reader refreshes last-seen when it is
// stale.
func (op *Operation) ensureNode(resp *etcdkv.Response, i int) error {
	if again, err := op.nodeRefused(resp, i); again || err != nil {
		return err // registered now, or another machine's
	}
	kv, _ := resp.First(i)
	if _, seen := decodeNode(kv.Value); op.now.Sub(seen) < touchEvery {
		return nil
	}
	_, err := op.cl.Txn(etcdkv.Txn{Then: []etcdkv.Op{op.touch()}})
	return err
}

// claimOnce sends a claim of this node (conditions cond, operations then,
// reads els when cond fails) once, in one round trip with the node's
// registration: while the node has no record, the record is written with
// it; otherwise the record must be this machine's (sameMachine) and the
// write moves its last-seen time on. So a node's first ADD costs what
// every later one does. The claim also requires its attachment's fence
// bucket fenceK (fence.go): as this host last saw it once the node is
// registered; absent while it is not, since registration writes
// every bucket and only a release of the attachment writes one before
// it (a DEL does not register the node). So a host's memory of an earlier
// cluster under the same prefix and node name costs its first claim
// nothing. It answers the claim's own answer, at the revision of the
// whole, and whether it registered the node.
func (op *Operation) claimOnce(fenceK string, cond []etcdkv.Cmp, then, els []etcdkv.Op) (*etcdkv.Response, bool, error) {
	resp, err := op.cl.TxnOnce(op.registering(
		[]etcdkv.Op{etcdkv.Nested(etcdkv.Txn{If: append(slices.Clip(cond), etcdkv.ModIs(fenceK, 0)), Then: then, Else: els})},
		etcdkv.Nested(etcdkv.Txn{
			If:   append(append(slices.Clip(cond), op.fenceCmp(fenceK)...), op.sameMachine()...),
			Then: append(slices.Clip(then), op.touch()),
			Else: els,
		})))
	if resp == nil {
		return nil, false, err
	}
	i := 0
	if op.registered(resp) {
		i = 1
	}
	in := resp.Nested(i)
	if in == nil {
		in = &etcdkv.Response{}
	}
	in.Revision = resp.Revision
	return in, resp.Succeeded, err
}

// nodeRefused reports a claim refused because the node's record, read at
// i of its answer, is not this machine's: it registers the node (the
// claim goes again), or fails.
func (op *Operation) nodeRefused(resp *etcdkv.Response, i int) (bool, error) {
	node, found := resp.First(i)
	if !found {
		return true, op.register()
	}
	return !bytes.HasPrefix(node.Value, op.identity()), op.checkNode(node)
}
