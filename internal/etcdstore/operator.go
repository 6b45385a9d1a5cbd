package etcdstore

import (
	"cmp"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// The operators' tool (`cniplugins-full leases`, `release`, `gc` and
// `pools` with --etcd, for a node that is gone for good: its runtime will
// never send the DEL or GC that would free its addresses): the claims as
// an operator sees them, as ops.Leases (the one shape of both stores).
// Which claim a release or a GC frees is the engine's (alloc.PlanRelease,
// alloc.PlanClaims).

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

// Leases reads the claims and the held holds as ops.Leases, with the
// tenants they count for: one read of the nodes' index keys (node's, or
// every node's for "") and of the hold keys, the CNI GC's (read), of pool
// alone when set. Which of them a listing shows, and in what order, is
// ops.LeaseFilter's for both stores: every node's holds are read, and a
// hold's node is the one that held it last.
func (o *Operator) Leases(node, pool string) ([]ops.Lease, error) {
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
	tenants, _, err := o.op.tenantRecords()
	out := []ops.Lease{}
	for s, v := range read {
		ls := leasesOf(s, v.Claims)
		for _, h := range v.Holds {
			if h.Held() {
				ls = append(ls, heldLease(h.Hold, s))
			}
		}
		for _, l := range ls {
			l.Tenant = tenants[s.Path()+"/"+l.Address]
			out = append(out, l)
		}
	}
	return out, err
}

// leasesOf are the claims cs of scope s as an operator sees them: a
// failed ADD's marker has no Address.
func leasesOf(s alloc.Scope, cs []alloc.GCClaim) []ops.Lease {
	out := make([]ops.Lease, len(cs))
	for i, c := range cs {
		r, _ := decodeRecord(c.Ref.(etcdkv.KV).Value)
		out[i] = ops.Lease{Address: r.Address, Network: cmp.Or(r.Network, s.Network), Pool: s.Pool, ContainerID: r.ContainerID,
			IfName: r.IfName, Owner: r.attachment().Kind(), Since: r.Since().UTC(), Node: r.Node, StickyKey: r.StickyKey,
			SecondOwner: r.Second, SecondMigration: r.SecondMigration}
		if r.Address == "" {
			out[i].Owner = ops.OwnerMarker
		}
		// A migration's two owners: the source's row names its target; the
		// target's own row (its share of the source's claim) names itself.
		if r.Shares {
			out[i].SecondOwner = r.ContainerID
		}
	}
	return out
}

// heldLease is hold h, read in scope s, as an operator sees it: no
// container; the address kept for the key until HoldExpires (zero:
// until released), its node the one that held it last.
func heldLease(h alloc.Hold, s alloc.Scope) ops.Lease {
	return ops.Lease{Address: h.Address, Network: cmp.Or(h.Network, s.Network), Pool: s.Pool, IfName: h.IfName, Owner: "sticky",
		Since: Record{Time: h.Time}.Since().UTC(), Node: h.LastNode, StickyKey: h.Key, HoldExpires: h.Expires.UTC(), LastOwner: h.LastOwner}
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

// CheckGone asks the engine whether node may be treated as gone for good
// (alloc.NodeGone), from when its node key says it last ran a command
// (never: a node nobody registered).
func (o *Operator) CheckGone(node string, deadAfter time.Duration) error {
	nodes, err := o.Nodes()
	n := nodes[node]
	return cmp.Or(alloc.NodeGone(node, n.Hostname, n.LastSeen, o.op.now, deadAfter), err)
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
