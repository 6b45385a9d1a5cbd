package daetcd

import (
	"net/netip"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
)

// The etcd store under the engine's contract: each call is one
// operation of node-a, as an exec of the plugin would make it, over the
// in-memory etcd (no etcd binary). contract_cluster_test.go runs it once
// more over a real cluster.
func TestStoreContract(t *testing.T) {
	alloctest.RunStoreContract(t, alloctest.Caps{Migration: true}, func(t *testing.T) alloctest.Subject {
		return newEtcdSubject(t, []string{etcdkvfake.New(t).URL()}, "/contract/")
	})
}

type etcdSubject struct {
	t         *testing.T
	endpoints []string
	prefix    string
	crash     *crashProxy // contract_crash_test.go
}

func newEtcdSubject(t *testing.T, endpoints []string, prefix string) etcdSubject {
	return etcdSubject{t: t, endpoints: endpoints, prefix: prefix, crash: newCrashProxy(t, endpoints[0])}
}

// contractScope is alloctest's: the pool every target is in.
var contractScope = alloc.Scope{Pool: "p"}

func (e etcdSubject) op(c alloctest.Call) *operation {
	cl := etcdkv.New(etcdkv.Config{Endpoints: e.eps(), Timeout: 10 * time.Second})
	return &operation{cl: cl, keys: layout{prefix: e.prefix}, node: "node-a", machine: "contract-machine", hostname: "h",
		network: c.Att.Network, cid: c.Att.ContainerID, ifname: c.Att.IfName, now: c.Now, nonce: newClaimID()}
}

func (e etcdSubject) Add(c alloctest.Call, targets []alloc.Target) ([]netip.Prefix, error) {
	var st *stickyAtt
	if c.Key != "" {
		st = &stickyAtt{key: c.Key, id: alloc.StickyID(c.Key, c.Att.IfName), holdFor: c.HoldFor, migration: c.Migration}
	}
	op := e.op(c)
	op.quota = newQuotaState(c.Quota, targets)
	got, err := op.add(targets, st)
	var out []netip.Prefix
	for _, a := range got {
		out = append(out, a.addr)
	}
	return out, err
}

func (e etcdSubject) Del(c alloctest.Call, _ []netip.Addr) error {
	op := e.op(c)
	return op.delRead(alloctest.Scopes, true)
}

func (e etcdSubject) Check(c alloctest.Call, ips []netip.Addr) error {
	op := e.op(c)
	if len(ips) == 0 {
		return alloc.CheckHeld(alloctest.CheckTargets(), c.Att, op.held)
	}
	placed := make([]alloc.Target, len(ips))
	for i, ip := range ips {
		placed[i].Scope = alloctest.ScopeOf(ip)
	}
	return op.check(ips, placed)
}

func (e etcdSubject) GC(live []alloc.Attachment, now time.Time) error {
	op := e.op(alloctest.Call{Att: alloc.Attachment{Network: "net"}, Now: now})
	return op.gc(alloctest.Scopes, alloc.NewKeepSet("net", live))
}

func (e etcdSubject) admin(now time.Time) *Admin {
	a, err := NewAdmin(AdminConfig{Endpoints: e.eps(), Prefix: e.prefix})
	if err != nil {
		e.t.Fatal(err)
	}
	a.op.now = now
	return a
}

func (e etcdSubject) ReleaseKey(key, ifname string, now time.Time) error {
	_, err := e.admin(now).ReleaseHold(key, ifname, contractScope, false)
	return err
}

func (e etcdSubject) ReleaseAddr(ip netip.Addr, now time.Time) error {
	_, err := e.admin(now).Release(ip, contractScope, "", "", false)
	return err
}
