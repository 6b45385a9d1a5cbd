package daetcd

import (
	"encoding/json"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// The key layout under the prefix (docs/etcd.md, "Keys in etcd"):
//
//	ip/pool/<pool>/<address>                    the claim: one key per address
//	ip/net/<network>/<address>                  (standalone: the network is the scope)
//	node/<node>/<scope>/<containerID>/<ifname>/<slot>
//	                                            the attachment's index key, one per
//	                                            range set (slot = its index) or pool (0)
//	full/<scope>/<slot>                         an ADD found that range set or pool full
//
// The claim and the index key hold the same record and are written and
// deleted together, in one transaction. The index key lives under the node,
// so DEL, CHECK and GC read a handful of keys of one attachment or one node
// and never scan a pool. Names cannot hold '/' (network, pool and node
// names, container IDs and interface names are all validated), so no key
// can reach outside its place.
type layout struct{ prefix string }

func scopePath(s dapools.Scope) string {
	if s.Pool != "" {
		return "pool/" + s.Pool
	}
	return "net/" + s.Network
}

func (l layout) addrKey(s dapools.Scope, ip netip.Addr) string {
	return l.prefix + "ip/" + scopePath(s) + "/" + ip.String()
}

func (l layout) scopeAddrs(s dapools.Scope) string { return l.prefix + "ip/" + scopePath(s) + "/" }

func (l layout) nodePrefix(node string) string { return l.prefix + "node/" + node + "/" }

func (l layout) nodeScope(node string, s dapools.Scope) string {
	return l.nodePrefix(node) + scopePath(s) + "/"
}

func (l layout) attachmentPrefix(node string, s dapools.Scope, cid, ifname string) string {
	return l.nodeScope(node, s) + cid + "/" + ifname + "/"
}

func (l layout) slotKey(node string, s dapools.Scope, cid, ifname string, slot int) string {
	return l.attachmentPrefix(node, s, cid, ifname) + strconv.Itoa(slot)
}

func (l layout) fullScope(s dapools.Scope) string { return l.prefix + "full/" + scopePath(s) + "/" }

func (l layout) fullKey(s dapools.Scope, slot int) string { return l.fullScope(s) + strconv.Itoa(slot) }

// markOf is the exhaustion mark of the range set or pool an index key is
// for (its last segment is the slot).
func (l layout) markOf(s dapools.Scope, indexKey string) string {
	return l.fullScope(s) + indexKey[strings.LastIndexByte(indexKey, '/')+1:]
}

// unmark collects the exhaustion marks that releases clear: a freed
// address makes its own range set or pool not full, and no other.
type unmark map[string]bool

// ops deletes each mark once (etcd refuses a transaction that writes one
// key twice).
func (u unmark) ops() []requestOp {
	var ops []requestOp
	for _, k := range slices.Sorted(maps.Keys(u)) {
		ops = append(ops, del(k))
	}
	return ops
}

// Record is the owner record, stored as JSON in both keys of a claim.
// Address is empty in a cancelled claim: a failed ADD leaves its index key
// holding one so that a claim of that ADD still in flight can never commit
// later (its transaction requires the index key to be absent).
type Record struct {
	Node        string `json:"node"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
	Network     string `json:"network"`
	Address     string `json:"address,omitempty"`
	Pool        string `json:"pool,omitempty"`
	Time        string `json:"time"`
	Claim       string `json:"claim"` // the ADD that wrote it (random, per process)
}

// ownerPrefix is how every record of this owner and address begins: the
// fields up to the address, in Record's order.
func (r Record) ownerPrefix() []byte {
	b, _ := json.Marshal(struct {
		Node        string `json:"node"`
		ContainerID string `json:"containerID"`
		IfName      string `json:"ifname"`
		Network     string `json:"network"`
		Address     string `json:"address"`
	}{r.Node, r.ContainerID, r.IfName, r.Network, r.Address})
	return append(b[:len(b)-1], ',')
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
// (hostlocal.KeepSet) name an owner.
func (r Record) attachment() hostlocal.Attachment {
	return hostlocal.Attachment{ContainerID: r.ContainerID, IfName: r.IfName, Network: r.Network}
}

// cancelled reports a failed ADD's marker.
func (r Record) cancelled() bool { return r.Address == "" }

// owns reports whether the record is this attachment's on this node and
// network: who may release or check it.
func (r Record) owns(node, network, cid, ifname string) bool {
	return r.Node == node && r.Network == network && r.ContainerID == cid && r.IfName == ifname
}

// Since parses the record's time.
func (r Record) Since() time.Time {
	t, _ := time.Parse(time.RFC3339, r.Time)
	return t
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
