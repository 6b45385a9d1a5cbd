package etcdstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// This file is the store's side of the operators' tool (`cniplugins-full
// leases`, `release` and `gc` with --etcd, for a node that is gone for
// good: its runtime will never send the DEL or GC that would free its
// addresses): a few reads and writes that the tool composes. What a row
// shows, how rows are filtered and sorted, is the tool's; which claim a
// release or a GC frees is the engine's (alloc.PlanRelease,
// alloc.PlanClaims).

// Operator reads and releases claims directly, any node's.
type Operator struct{ op *Operation }

// Access is how an operator reaches etcd: ipam.etcd's fields but
// the node name (an operator reads and releases any node's claims), with
// the timeout as a duration and the TLS files flat, as flags give them.
type Access struct {
	Endpoints                 []string
	Prefix                    string
	Timeout                   time.Duration // 0: ipam.etcd's default
	CAFile, CertFile, KeyFile string        // ipam.etcd.tls
	Username, PasswordFile    string
	AllowPasswordOverHTTP     bool // ipam.etcd.allowPasswordOverHTTP
}

// OpenOperator validates c exactly as ipam.etcd is validated.
func OpenOperator(c Access) (*Operator, error) {
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
	return &Operator{op: &Operation{cl: cl, keys: layout{prefix: cfg.Prefix}, now: time.Now(), log: logging.Nop(), nonce: newClaimID()}}, nil
}

// Now is the time the operator acts at: what a hold's expiry and a
// node's last sighting are judged against.
func (o *Operator) Now() time.Time { return o.op.now }

// Claim is one claim as read: its record, the scope its key names and
// the key's mod revision. A failed ADD's marker has no Address.
type Claim struct {
	Record
	Scope    alloc.Scope `json:"-"`
	Revision int64       `json:"-"`
	// Held is a sticky key's hold (sticky.go): no container, the
	// address kept for the key (Record.StickyKey) until HoldExpires
	// (zero: until released); Node is the one that held it last.
	Held        bool
	HoldExpires time.Time
	LastOwner   string
	// Tenant is the quota's tenant the address counts for ("" none), once
	// Tenants has read it.
	Tenant string
}

// Claims lists node's claims ("": every node's), read from the nodes'
// index keys in one prefix read, in key order. Fences hold nothing and
// are left out.
func (o *Operator) Claims(node string) ([]Claim, error) {
	prefix := o.op.keys.prefix + "node/"
	if node != "" {
		if err := ValidNodeName("--node", node); err != nil {
			return nil, err
		}
		prefix = o.op.keys.nodePrefix(node)
	}
	kvs, err := o.op.cl.List(prefix, false)
	if err != nil {
		return nil, err
	}
	var out []Claim
	for _, kv := range kvs {
		r, ok := decodeRecord(kv.Value)
		if !ok || r.Released { // a fence holds nothing
			continue
		}
		if s, ok := o.op.keys.scopeIn(o.op.keys.nodePrefix(r.Node), string(kv.Key)); ok {
			out = append(out, Claim{Record: r, Scope: s, Revision: kv.ModRevision})
		}
	}
	return out, nil
}

// Tenants sets each claim's Tenant, read once for all of them.
func (o *Operator) Tenants(cs []Claim) error {
	tenants, err := o.op.tenantsOfClaims()
	for i, c := range cs {
		cs[i].Tenant = tenants[ScopePath(c.Scope)+"/"+c.Address]
	}
	return err
}

// Release frees addr in scope as the engine plans it (alloc.PlanRelease)
// over the claim read: refused when it is not claimed or when container
// (and ifname, and node) are given and do not match the attachment it
// releases. dryRun plans and returns the claim without changing
// anything.
func (o *Operator) Release(addr netip.Addr, s alloc.Scope, container, ifname, node string, dryRun bool) (Claim, error) {
	if node != "" {
		if err := ValidNodeName("--node", node); err != nil {
			return Claim{}, err
		}
	}
	addr = addr.Unmap()
	resp, err := o.op.cl.Read(etcdkv.Get(o.op.keys.addrKey(s, addr)))
	if err != nil {
		return Claim{}, err
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
	p, err := alloc.PlanRelease(v, alloc.ReleaseRequest{Addr: addr, Container: container, IfName: ifname, Node: node, Where: ScopePath(s)}, o.op.now)
	if err != nil {
		return Claim{}, err
	}
	// The claim goes through the index key that names it, as a DEL
	// releases it (a sticky claim becomes a hold, which release
	// --sticky-key frees), writing the attachment's fence bucket as any
	// release does (fence.go). A migration's share ends through the index
	// key of the owner it ends for: the target's (DelDropSecond), or the
	// source's, whose address the target keeps (DelHandOver). A claim no
	// index key names goes alone, while as read.
	shared := p.Del.Step == alloc.DelDropSecond || p.Del.Step == alloc.DelHandOver
	owner, cid := r.Node, r.ContainerID
	if p.Del.Step == alloc.DelDropSecond {
		owner, cid = r.SecondNode, r.Second
	}
	idx, err := o.op.cl.Read(etcdkv.GetPrefix(o.op.keys.attachmentPrefix(owner, s, cid, r.IfName)))
	if err != nil {
		return Claim{}, err
	}
	changed := fmt.Errorf("%s in %s changed while being released; nothing done, try again", addr, ScopePath(s))
	txn := etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ValueIs(string(kv.Key), kv.Value)}, Then: []etcdkv.Op{etcdkv.Delete(string(kv.Key))}}
	for _, ikv := range idx.KVs(0) {
		ir, ok := decodeRecord(ikv.Value)
		switch {
		case shared && ok && ir.Address == r.Address && ir.sharing() && dryRun:
			return Claim{Record: ir, Scope: s}, nil
		case shared && ok && ir.Address == r.Address && ir.sharing():
			return Claim{Record: ir, Scope: s}, o.op.commitShared(s, ikv, ir, "")
		case !shared && bytes.Equal(ikv.Value, kv.Value):
			txn, _ = o.op.release(s, ikv, "", true)
		}
	}
	switch {
	case shared:
		return Claim{}, changed
	case dryRun:
		return Claim{Record: r, Scope: s}, nil
	}
	applied, err := o.op.apply([]etcdkv.Txn{txn}, o.op.bump(r))
	if err != nil {
		return Claim{}, err
	}
	if !applied[0] {
		return Claim{}, changed
	}
	return Claim{Record: r, Scope: s}, nil
}

// Node is a node as its machine last reported to etcd.
type Node struct {
	Name     string    `json:"name"`
	Hostname string    `json:"hostname"`
	LastSeen time.Time `json:"lastSeen"`
}

// Nodes lists the nodes that have a machine identity in etcd (every node
// whose ADD, DEL, GC or STATUS ran since they were introduced), by name.
func (o *Operator) Nodes() ([]Node, error) {
	prefix := o.op.keys.nodesPrefix()
	kvs, err := o.op.cl.List(prefix, false)
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
