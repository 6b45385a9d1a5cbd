package daetcd

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// operation is one CNI command against etcd: the client with its
// deadline, the key layout, and who is asking.
type operation struct {
	cl      *client
	keys    layout
	node    string
	network string
	cid     string
	ifname  string
	log     *logging.Logger
}

// begin is how every command starts: ipam-da-pools' parse of the config
// (with the ranges when needRanges), ipam.etcd, and the operation on
// behalf of the request's attachment.
func begin(req *plugin.Request, needRanges bool) (dapools.Parsed, *operation, error) {
	p, err := dapools.Parse(req.Conf, req.CNIArgs, needRanges)
	if err != nil {
		return p, nil, err
	}
	ec, err := parseEtcd(req.Conf, true)
	if err != nil {
		return p, nil, err
	}
	op, err := newOperation(ec, p.Network(), req.Args.ContainerID, req.Args.IfName, req.Log)
	return p, op, err
}

// beginTargets is how ADD, CHECK and STATUS start: begin with the ranges,
// and the targets they place addresses in.
func beginTargets(req *plugin.Request) (dapools.Parsed, *operation, []dapools.Target, error) {
	p, op, err := begin(req, true)
	if err != nil {
		return p, nil, nil, err
	}
	targets, err := p.Targets()
	return p, op, targets, err
}

func newOperation(c *etcdConfig, network, cid, ifname string, log *logging.Logger) (*operation, error) {
	cl, err := newClient(c)
	if err != nil {
		return nil, err
	}
	return &operation{cl: cl, keys: layout{prefix: c.prefix}, node: c.node, network: network, cid: cid, ifname: ifname, log: log}, nil
}

// newClaimID names one ADD's claims: a repeated claim (the client resent
// it after losing the answer) is recognised by it.
func newClaimID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// record is this attachment's owner record for an address of scope.
func (op *operation) record(s dapools.Scope, addr, claim string, now time.Time) Record {
	return Record{
		Node: op.node, ContainerID: op.cid, IfName: op.ifname, Network: op.network,
		Address: addr, Pool: s.Pool, Time: now.UTC().Format(time.RFC3339), Claim: claim,
	}
}

// slotKey is this attachment's index key in scope.
func (op *operation) slotKey(s dapools.Scope, slot int) string {
	return op.keys.slotKey(op.node, s, op.cid, op.ifname, slot)
}

// readAttachment reads the attachment's index keys in each scope, in one
// linearizable read: response i holds scope i's.
func (op *operation) readAttachment(scopes []dapools.Scope) (*txnResponse, error) {
	reads := make([]requestOp, len(scopes))
	for i, s := range scopes {
		reads[i] = getPrefix(op.keys.attachmentPrefix(op.node, s, op.cid, op.ifname))
	}
	return op.cl.read(reads...)
}

// release is the guarded delete of one claim found through its index key
// kv: both keys go, in one transaction, only if both still hold exactly
// what was read. A failed ADD's marker (no address) is just deleted. The
// range set's exhaustion mark is added to marks.
func (op *operation) release(s dapools.Scope, kv keyValue, marks unmark) txnRequest {
	slotK := string(kv.Key)
	marks[op.keys.markOf(s, slotK)] = true
	t := txnRequest{Compare: []compare{modIs(slotK, kv.ModRevision)}, Success: []requestOp{del(slotK)}}
	if r, ok := decodeRecord(kv.Value); ok && !r.cancelled() {
		if ip, err := parseAddr(r.Address); err == nil {
			addrK := op.keys.addrKey(s, ip)
			t.Compare = append(t.Compare, valueIs(addrK, kv.Value))
			t.Success = append(t.Success, del(addrK))
		}
	}
	return t
}

// commit sends the transactions as one: a single one as it is, several as
// nested transactions of one outer transaction (one round trip, each
// keeping its own conditions), plus extra unconditional operations.
func (op *operation) commit(txns []txnRequest, extra ...requestOp) error {
	switch {
	case len(txns) == 0 && len(extra) == 0:
		return nil
	case len(txns) == 1 && len(extra) == 0:
		_, err := op.cl.txn(txns[0])
		return err
	}
	outer := txnRequest{}
	for i := range txns {
		outer.Success = append(outer.Success, requestOp{Txn: &txns[i]})
	}
	outer.Success = append(outer.Success, extra...)
	_, err := op.cl.txn(outer)
	return err
}
