package etcdstore

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// This file is the operators' side: what `cniplugins-full leases`,
// `release` and `gc` do with --etcd, for a node that is gone for good (its runtime
// will never send the DEL or GC that would free its addresses).

// Admin reads and releases claims directly.
type Admin struct{ op *Operation }

// AdminConfig is how an operator reaches etcd: ipam.etcd's fields but
// the node name (an operator reads and releases any node's claims), with
// the timeout as a duration and the TLS files flat, as flags give them.
// It is etcdstore's own type so that this package needs nothing of the
// operators' commands; the full flavour's main converts their flags.
type AdminConfig struct {
	Endpoints                 []string
	Prefix                    string
	Timeout                   time.Duration // 0: ipam.etcd's default
	CAFile, CertFile, KeyFile string        // ipam.etcd.tls
	Username, PasswordFile    string
	AllowPasswordOverHTTP     bool // ipam.etcd.allowPasswordOverHTTP
}

// NewAdmin validates c exactly as ipam.etcd is validated.
func NewAdmin(c AdminConfig) (*Admin, error) {
	e := etcdConf{Endpoints: c.Endpoints, Prefix: c.Prefix, Username: c.Username, PasswordFile: c.PasswordFile,
		AllowPasswordOverHTTP: c.AllowPasswordOverHTTP}
	if c.Timeout > 0 {
		e.Timeout = c.Timeout.String()
	}
	if c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" {
		e.TLS = &tlsFiles{CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile}
	}
	cfg, err := e.validate(false)
	if err != nil {
		return nil, err
	}
	cl, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Admin{op: &Operation{cl: cl, keys: layout{prefix: cfg.prefix}, now: time.Now(), log: logging.Nop(), nonce: newClaimID()}}, nil
}

// Lease is one claim as an operator sees it. A failed ADD's marker has no
// Address.
type Lease struct {
	Record
	Scope alloc.Scope `json:"-"`
	key   etcdkv.KV
	// Held is a sticky key's hold (sticky.go): no container, the
	// address kept for the key (Record.StickyKey) until HoldExpires
	// (zero: until released); Node is the one that held it last.
	Held        bool
	HoldExpires time.Time
	LastOwner   string
	// Tenant is the quota's tenant the address counts for ("" none).
	Tenant string
}

// Filter selects leases; empty fields match everything.
type Filter struct {
	Node, Network, Pool, Container string
}

// Leases lists the claims that match f, read from the nodes' index keys
// (one prefix read: one node's, or every node's), sorted by node, scope
// and address.
func (a *Admin) Leases(f Filter) ([]Lease, error) {
	prefix := a.op.keys.prefix + "node/"
	if f.Node != "" {
		if err := ValidNodeName("--node", f.Node); err != nil {
			return nil, err
		}
		prefix = a.op.keys.nodePrefix(f.Node)
	}
	kvs, err := a.op.cl.List(prefix, false)
	if err != nil {
		return nil, err
	}
	out, err := a.holds(f)
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		l, ok := a.lease(kv)
		if !ok || (f.Network != "" && l.Network != f.Network) || (f.Pool != "" && l.Scope.Pool != f.Pool) ||
			(f.Container != "" && !strings.HasPrefix(l.ContainerID, f.Container)) {
			continue
		}
		out = append(out, l)
	}
	tenants, err := a.op.tenantsOfClaims()
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Tenant = tenants[scopePath(out[i].Scope)+"/"+out[i].Address]
	}
	sortLeases(out)
	return out, nil
}

// sortLeases sorts by node, scope and address.
func sortLeases(ls []Lease) {
	slices.SortFunc(ls, func(x, y Lease) int {
		if c := strings.Compare(x.Node+"\x00"+scopePath(x.Scope), y.Node+"\x00"+scopePath(y.Scope)); c != 0 {
			return c
		}
		a, _ := netip.ParseAddr(x.Address) // a marker (no address) sorts first
		b, _ := netip.ParseAddr(y.Address)
		return a.Compare(b)
	})
}

// lease decodes an index key: node/<node>/<pool|net>/<name>/<cid>/<ifname>/<slot>.
func (a *Admin) lease(kv etcdkv.KV) (Lease, bool) {
	parts := strings.Split(strings.TrimPrefix(string(kv.Key), a.op.keys.prefix+"node/"), "/")
	r, ok := decodeRecord(kv.Value)
	if len(parts) != 6 || !ok || r.released() { // a fence holds nothing
		return Lease{}, false
	}
	l := Lease{Record: r, key: kv}
	if l.Scope, ok = parseScope(parts[1], parts[2]); !ok {
		return Lease{}, false
	}
	return l, true
}

// ScopeName is "pool P" or "network N".
func (l Lease) ScopeName() string {
	if l.Scope.Pool != "" {
		return "pool " + l.Scope.Pool
	}
	return "network " + l.Scope.Network
}

// Release frees addr in scope as the engine plans it (alloc.PlanRelease)
// over the claim read: refused when it is not claimed or when container
// (and ifname, and node) are given and do not match the attachment it
// releases. dryRun plans and returns the lease without changing
// anything.
func (a *Admin) Release(addr netip.Addr, s alloc.Scope, container, ifname, node string, dryRun bool) (Lease, error) {
	if node != "" {
		if err := ValidNodeName("--node", node); err != nil {
			return Lease{}, err
		}
	}
	addr = addr.Unmap()
	resp, err := a.op.cl.Read(etcdkv.Get(a.op.keys.addrKey(s, addr)))
	if err != nil {
		return Lease{}, err
	}
	kv, ok := resp.First(0)
	r, valid := decodeRecord(kv.Value)
	v := alloc.ReleaseView{Reserved: ok, NoOwner: !valid}
	if h, held := decodeHold(kv.Value); !valid && held && h.Held() {
		v.Record = &alloc.HoldRecord{Hold: h}
	} else if valid {
		v.Owner, v.OwnerNode = alloc.Attachment{ContainerID: r.ContainerID, IfName: r.IfName, Network: r.Network}, r.Node
		if r.Hold != "" {
			v.Record = &alloc.HoldRecord{Hold: alloc.Hold{Key: r.StickyKey, IfName: r.IfName, Address: r.Address, Owner: r.ContainerID, Node: r.Node,
				Second: r.Second, SecondNode: r.SecondNode, SecondMigration: r.SecondMigration}}
		}
	}
	p, err := alloc.PlanRelease(v, alloc.ReleaseRequest{Addr: addr, Container: container, IfName: ifname, Node: node, Where: scopePath(s)})
	switch {
	case err != nil:
		return Lease{}, err
	case p.Action == alloc.EndShare, p.Action == alloc.HandOverAddr:
		return a.releaseShare(s, r, p.Action == alloc.EndShare, dryRun)
	}
	// The index key holds the same record; find it to delete both, each
	// guarded by its exact value.
	idx, err := a.op.cl.Read(etcdkv.GetPrefix(a.op.keys.attachmentPrefix(r.Node, s, r.ContainerID, r.IfName)))
	if err != nil {
		return Lease{}, err
	}
	l := Lease{Record: r, Scope: s}
	txn := etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ValueIs(string(kv.Key), kv.Value)}, Then: []etcdkv.Op{etcdkv.Delete(string(kv.Key))}}
	// The attachment's fence bucket too, as any release writes it
	// (fence.go): a claim of it still in flight can no longer commit.
	marks := unmark{a.op.keys.fenceOf(r.Node, r.ContainerID, r.IfName): []byte(a.op.nonce)}
	for _, ikv := range idx.KVs(0) {
		if string(ikv.Value) == string(kv.Value) {
			txn.If = append(txn.If, etcdkv.ModIs(string(ikv.Key), ikv.ModRevision))
			txn.Then = append(txn.Then, etcdkv.Delete(string(ikv.Key)))
			marks[a.op.keys.markOf(s, string(ikv.Key))] = nil
			if p.Action == alloc.HoldAddr {
				// A sticky claim becomes a hold, as a DEL would make it
				// (its key gets the address back); release --sticky-key
				// frees the hold.
				holdK := a.op.keys.holdKey(s, r.Hold, lastSegment(string(ikv.Key)))
				txn.Then[0] = a.op.applyDel(a.op.planDel(r.attachment(), r), string(kv.Key), holdK, []etcdkv.Cmp{etcdkv.ModIs(holdK, kv.ModRevision)}, "")[0]
			}
		}
	}
	if dryRun {
		return l, nil
	}
	txn.Then = append(txn.Then, marks.ops()...)
	out, err := a.op.cl.Txn(txn)
	if err != nil {
		return Lease{}, err
	}
	if !out.Succeeded {
		return Lease{}, fmt.Errorf("%s in %s changed while being released; nothing done, try again", addr, scopePath(s))
	}
	return l, nil
}

// Node is a node as its machine last reported to etcd.
type Node struct {
	Name     string    `json:"name"`
	Hostname string    `json:"hostname"`
	LastSeen time.Time `json:"lastSeen"`
}

// Nodes lists the nodes that have a machine identity in etcd (every node
// whose ADD, DEL, GC or STATUS ran since they were introduced), by name.
func (a *Admin) Nodes() ([]Node, error) {
	prefix := a.op.keys.nodesPrefix()
	kvs, err := a.op.cl.List(prefix, false)
	if err != nil {
		return nil, err
	}
	var out []Node
	for _, kv := range kvs {
		var r nodeRecord
		if json.Unmarshal(kv.Value, &r) != nil {
			continue
		}
		seen, _ := time.Parse(time.RFC3339, r.Seen)
		out = append(out, Node{Name: string(kv.Key[len(prefix):]), Hostname: r.Hostname, LastSeen: seen})
	}
	return out, nil
}

// CheckGone refuses to treat node as gone for good while it was seen alive
// within deadAfter: its runtime may still DEL and GC, and its live
// containers still use the addresses that an operator's GC would free.
func (a *Admin) CheckGone(node string, deadAfter time.Duration) error {
	nodes, err := a.Nodes()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.Name == node && a.op.now.Sub(n.LastSeen) < deadAfter {
			return fmt.Errorf("node %s (host %q) was seen alive %s ago, less than --dead-after %s: it may still use its addresses; wait, or pass --force if it is gone for good",
				node, n.Hostname, a.op.now.Sub(n.LastSeen).Round(time.Second), deadAfter)
		}
	}
	return nil
}

// parseScope is the scope a key names as <pool|net>/<name>.
func parseScope(kind, name string) (alloc.Scope, bool) {
	switch kind {
	case "pool":
		return alloc.Scope{Pool: name}, true
	case "net":
		return alloc.Scope{Network: name}, true
	}
	return alloc.Scope{}, false
}

// releaseShare is an operator's release of an address a migration's two
// owners share, as one owner's DEL would release it: the target's share
// ends (target), or the source's goes and the target keeps the address.
func (a *Admin) releaseShare(s alloc.Scope, r Record, target bool, dryRun bool) (Lease, error) {
	node, cid := r.Node, r.ContainerID
	if target {
		node, cid = r.SecondNode, r.Second
	}
	idx, err := a.op.cl.Read(etcdkv.GetPrefix(a.op.keys.attachmentPrefix(node, s, cid, r.IfName)))
	if err != nil {
		return Lease{}, err
	}
	for _, kv := range idx.KVs(0) {
		ir, ok := decodeRecord(kv.Value)
		if !ok || ir.Address != r.Address || !ir.sharing() {
			continue
		}
		l := Lease{Record: ir, Scope: s}
		if dryRun {
			return l, nil
		}
		return l, a.op.commitShared(s, kv, ir, "")
	}
	return Lease{}, fmt.Errorf("%s in %s changed while being released; nothing done, try again", r.Address, scopePath(s))
}
