package etcdstore

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// layout builds the keys under the prefix (docs/etcd.md, "Keys in etcd",
// lists them all). A claim's index key lives under its node, so DEL,
// CHECK and GC read a handful of keys of one attachment or one node and
// never scan a pool. Names cannot hold '/' (all are validated), so no key
// can reach outside its place.
type layout struct{ prefix string }

func (l layout) scopeAddrs(s alloc.Scope) string { return l.prefix + "ip/" + s.Path() + "/" }

func (l layout) addrKey(s alloc.Scope, ip netip.Addr) string { return l.scopeAddrs(s) + ip.String() }

func (l layout) nodePrefix(node string) string { return l.prefix + "node/" + node + "/" }

func (l layout) nodeScope(node string, s alloc.Scope) string {
	return l.nodePrefix(node) + s.Path() + "/"
}

func (l layout) attachmentPrefix(node string, s alloc.Scope, cid, ifname string) string {
	return l.nodeScope(node, s) + cid + "/" + ifname + "/"
}

func (l layout) slotKey(node string, s alloc.Scope, cid, ifname string, slot int) string {
	return l.attachmentPrefix(node, s, cid, ifname) + strconv.Itoa(slot)
}

func (l layout) nodeKey(node string) string { return l.prefix + "nodes/" + node }

func (l layout) fullScope(s alloc.Scope) string { return l.prefix + "full/" + s.Path() + "/" }

func (l layout) fullKey(s alloc.Scope, slot int) string { return l.fullScope(s) + strconv.Itoa(slot) }

// scopeIn is the scope that an index key (node/<node>/<pool|net>/<name>/...),
// a hold key (sticky/<pool|net>/<name>/...) or a tenant's record
// (tenant/<hex tenant>/<pool|net>/<name>/<address>) names, and whose
// (the node's or the tenant's segment) where the key has one.
func (l layout) scopeIn(key string) (s alloc.Scope, whose string, ok bool) {
	root, rest, _ := strings.Cut(strings.TrimPrefix(key, l.prefix), "/")
	if root == "node" || root == "tenant" {
		whose, rest, _ = strings.Cut(rest, "/")
	}
	if parts := strings.SplitN(rest, "/", 3); len(parts) == 3 {
		s, ok = parseScope(parts[0], parts[1])
	}
	return s, whose, ok
}

// markOf is the exhaustion mark of the range set or pool an index or
// hold key is for (its last segment is the slot).
func (l layout) markOf(s alloc.Scope, key string) string { return l.fullScope(s) + lastSegment(key) }

// freed records on an exhaustion mark (docs/etcd.md, "Timeouts and late
// commits") that an address was freed: written empty, not deleted,
// because a deleted key cannot tell a mark put late (MarkExhausted) that
// anything happened.
func freed(mark string) etcdkv.Op { return etcdkv.Put(mark, nil) }

// unmark collects the marks of a batch of releases, where one mark may
// stand for many of them: etcd refuses a transaction that writes a key
// twice, so the batch writes each once, whether or not each release
// happens (an empty mark only costs the next ADD the search that puts
// it back). The releases' fence buckets (fence.go) are written the same
// way, and go in the same set with the value they get (marks: nil).
type unmark map[string][]byte

func (u unmark) ops() []etcdkv.Op {
	var ops []etcdkv.Op
	for _, k := range slices.Sorted(maps.Keys(u)) {
		ops = append(ops, etcdkv.Put(k, u[k]))
	}
	return ops
}

// Record is the owner record, stored as JSON in both keys of a claim.
// Address is empty in a cancelled claim: a failed ADD leaves its index key
// holding one so that a claim of that ADD still in flight can never commit
// later (its transaction requires the index key to be absent).
type Record struct {
	// Hold is the StickyID of a sticky attachment's key (sticky.go),
	// first so that the one-round-trip DEL's ranges of a sticky and of a
	// plain record never overlap.
	Hold        string `json:"hold,omitempty"`
	Node        string `json:"node"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
	Network     string `json:"network"`
	Address     string `json:"address,omitempty"`
	Pool        string `json:"pool,omitempty"`
	Time        string `json:"time"`
	Claim       string `json:"claim"` // the ADD that wrote it (random, per process)
	// A sticky claim's key and ipam.sticky.holdFor: what any release
	// (DEL, GC, an operator's) needs to turn it into a hold.
	StickyKey string `json:"stickyKey,omitempty"`
	HoldFor   string `json:"holdFor,omitempty"`
	// Released marks the fence that versions before the fence buckets
	// (fence.go) left in the index key, with a lease: no address, nothing
	// held. Only read, so that one met before it expires is ignored.
	Released bool `json:"released,omitempty"`
	// A sticky owner's migration name, and, while a live migration's
	// target shares its address, that target (migration.go). Shares marks
	// the target's own index key: the address is the owner's claim.
	Migration       string `json:"migration,omitempty"`
	SecondNode      string `json:"secondNode,omitempty"`
	Second          string `json:"second,omitempty"`
	SecondMigration string `json:"secondMigration,omitempty"`
	Shares          bool   `json:"shares,omitempty"`
}

// ownerPrefix is how every record of this owner and (non-empty) address
// begins: the fields up to the address, in Record's order.
func (r Record) ownerPrefix() []byte {
	b := Record{Hold: r.Hold, Node: r.Node, ContainerID: r.ContainerID, IfName: r.IfName, Network: r.Network, Address: r.Address}.encode()
	return b[:bytes.Index(b, []byte(`"time":`))]
}

// writtenBefore is the upper bound of every record of this owner and
// address written before r.Time: they share the fields up to "time", and
// times of one width sort as bytes. A DEL that deletes only below it
// cannot delete what a later ADD writes, whenever a copy of it lands.
func (r Record) writtenBefore() []byte {
	r.Claim = ""
	b := r.encode()
	return b[:bytes.LastIndex(b, []byte(`","claim":`))]
}

func (r Record) encode() []byte {
	b, _ := json.Marshal(r) // strings only: cannot fail
	return b
}

func decodeRecord(b []byte) (Record, bool) {
	var r Record
	return r, json.Unmarshal(b, &r) == nil && r.ContainerID != ""
}

// attachment is who holds the claim, as the allocator and GC's keep rule
// (alloc.KeepSet) name an owner.
func (r Record) attachment() alloc.Attachment {
	return alloc.Attachment{ContainerID: r.ContainerID, IfName: r.IfName, Network: r.Network}
}

// hold is the key's record of a sticky claim, as the engine plans its
// releases over it (nil: not sticky, or no claim of its own: a marker, a
// migration target's index key).
func (r Record) hold() *alloc.HoldRecord {
	if r.Hold == "" || r.cancelled() || r.Shares {
		return nil
	}
	return &alloc.HoldRecord{Hold: alloc.Hold{Node: r.Node, Owner: r.ContainerID, IfName: r.IfName, Network: r.Network, Address: r.Address,
		Second: r.Second, SecondNode: r.SecondNode, SecondMigration: r.SecondMigration, Key: r.StickyKey, HoldFor: r.HoldFor}}
}

// cancelled reports a record without an address: a failed ADD's marker,
// or a release's fence (Released).
func (r Record) cancelled() bool { return r.Address == "" }

// Since parses the record's time.
func (r Record) Since() time.Time {
	t, _ := time.Parse(time.RFC3339, r.Time)
	return t
}
