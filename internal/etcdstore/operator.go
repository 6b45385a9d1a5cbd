package etcdstore

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// The operators' tool (`cniplugins-full leases`, `release`, `gc` and
// `pools` with --etcd, for a node that is gone for good: its runtime will
// never send the DEL or GC that would free its addresses): the claims as
// an operator sees them. Which claim a release or a
// GC frees is the engine's (alloc.PlanRelease, alloc.PlanClaims).

// Operator reads and releases claims directly, any node's.
type Operator struct{ op *Operation }

// OpenOperator validates c exactly as ipam.etcd is validated.
func OpenOperator(c clusteraccess.Access) (*Operator, error) {
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
	op, err := connect(cfg, time.Now(), logging.Nop())
	if err != nil {
		return nil, err
	}
	return &Operator{op}, nil
}

// Claim is one claim as read: its record and the scope its key names. A
// failed ADD's marker has no Address.
type Claim struct {
	Record
	Scope alloc.Scope `json:"-"`
	// Held is a sticky key's hold (sticky.go): no container, the
	// address kept for the key (Record.StickyKey) until HoldExpires
	// (zero: until released); Node is the one that held it last.
	Held        bool
	HoldExpires time.Time
	LastOwner   string
	// Tenant is the quota's tenant the address counts for ("" none), once
	// Leases has read it.
	Tenant string
}

// Leases reads the claims and the held holds, with the tenants they
// count for: one read of the nodes' index keys (node's, or every node's
// for "") and of the hold keys, the CNI GC's (read), of pool alone when
// set. Which of them a listing shows, and in what order, is the
// operators' tool's (ops.LeaseFilter) for both stores: every node's
// holds are read, and a hold's node is the one that held it last.
func (o *Operator) Leases(node, pool string) ([]Claim, error) {
	index := o.op.keys.prefix + "node/"
	if node != "" {
		if err := ValidNodeName("--node", node); err != nil {
			return nil, err
		}
		index = o.op.keys.nodePrefix(node)
	}
	read, err := o.op.read(gcRun{pool: pool, index: []string{index}, holds: []string{o.op.keys.prefix + "sticky/"}})
	if err != nil {
		return nil, err
	}
	var sel []Claim
	for s, v := range read {
		for _, c := range v.Claims {
			sel = append(sel, claimOf(s, c.Ref))
		}
		for _, h := range v.Holds {
			if h.Held() {
				sel = append(sel, heldClaim(h.Hold, s))
			}
		}
	}
	tenants, _, err := o.op.tenantRecords()
	for i, c := range sel {
		sel[i].Tenant = tenants[ScopePath(c.Scope)+"/"+c.Address]
	}
	return sel, err
}

// claimOf is the claim index key ref (an etcdkv.KV) of scope s names.
func claimOf(s alloc.Scope, ref any) Claim {
	r, _ := decodeRecord(ref.(etcdkv.KV).Value)
	return Claim{Record: r, Scope: s}
}

// heldClaim is hold h, read in scope s, as an operator sees it: a Claim
// with no container.
func heldClaim(h alloc.Hold, s alloc.Scope) Claim {
	return Claim{
		Record: Record{Node: h.LastNode, IfName: h.IfName, Network: h.Network, Address: h.Address, Pool: s.Pool, Time: h.Time, StickyKey: h.Key},
		Scope:  s, Held: true, HoldExpires: h.Expires, LastOwner: h.LastOwner,
	}
}

// sortClaims sorts by node, scope and address, as ops.LeaseFilter sorts
// leases: GC's plan (collect).
func sortClaims(cs []Claim) {
	slices.SortFunc(cs, func(x, y Claim) int {
		a, _ := netip.ParseAddr(x.Address) // a marker (no address) sorts first
		b, _ := netip.ParseAddr(y.Address)
		return cmp.Or(strings.Compare(x.Node, y.Node), strings.Compare(ScopePath(x.Scope), ScopePath(y.Scope)), a.Compare(b))
	})
}

// Node is a node as its machine last reported to etcd.
type Node struct {
	Hostname string
	LastSeen time.Time
}

// Nodes maps the nodes that have a machine identity in etcd (every node
// whose ADD, DEL, GC or STATUS ran since they were introduced) by name.
func (o *Operator) Nodes() (map[string]Node, error) {
	prefix := o.op.keys.nodeKey("")
	kvs, err := o.op.cl.List(prefix, false)
	out := map[string]Node{}
	for _, kv := range kvs {
		r, seen := decodeNode(kv.Value)
		out[string(kv.Key[len(prefix):])] = Node{Hostname: r.Hostname, LastSeen: seen}
	}
	return out, err
}

// CheckGone refuses to treat node as gone for good while it was seen alive
// within deadAfter: its runtime may still DEL and GC, and its live
// containers still use the addresses that an operator's GC would free.
func (o *Operator) CheckGone(node string, deadAfter time.Duration) error {
	nodes, err := o.Nodes()
	if n, ok := nodes[node]; ok && o.op.now.Sub(n.LastSeen) < deadAfter {
		return fmt.Errorf("node %s (host %q) was seen alive %s ago, less than --dead-after %s: it may still use its addresses; wait, or pass --force if it is gone for good",
			node, n.Hostname, o.op.now.Sub(n.LastSeen).Round(time.Second), deadAfter)
	}
	return err
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
