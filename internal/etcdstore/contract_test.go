package etcdstore_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
	. "github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// ipam-da-etcd under the engine's contract: every row through its own
// CNI commands, in-process, as node-a over the in-memory etcd (no etcd
// binary), and the operators' releases through Operator, the code behind
// `cniplugins release --etcd`. contract_cluster_test.go runs it once more
// over a real cluster.
func TestStoreContract(t *testing.T) {
	alloctest.RunStoreContract(t, alloctest.Caps{Migration: true}, func(t *testing.T) alloctest.Subject {
		return newEtcdSubject(t, []string{etcdkvfake.New(t).URL()}, "/contract/")
	})
}

// etcdSubject is node-a's commands over a prefix of one etcd.
type etcdSubject struct {
	t         *testing.T
	endpoints []string
	prefix    string
	machine   string      // node-a's machine ID file
	crash     *crashProxy // contract_crash_test.go; nil: never crashes
}

// etcdAt is node-a over prefix of the etcd at endpoints, its machine ID
// file written once for the test.
func etcdAt(t *testing.T, endpoints []string, prefix string) etcdSubject {
	machine := filepath.Join(t.TempDir(), "machine-id")
	if err := os.WriteFile(machine, []byte("contract-machine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return etcdSubject{t: t, endpoints: endpoints, prefix: prefix, machine: machine}
}

func newEtcdSubject(t *testing.T, endpoints []string, prefix string) alloctest.Crashable {
	e := etcdAt(t, endpoints, prefix)
	e.crash = newCrashProxy(t, endpoints[0])
	return alloctest.WithCrashes(e.cni(), e)
}

// contractScope is alloctest's: the pool every target is in.
var contractScope = alloc.Scope{Pool: "p"}

// cni is the subject's commands: ipam-da-etcd as node-a.
func (e etcdSubject) cni() alloctest.CNI {
	return alloctest.CNI{Operators: e, Command: func() (plugin.Personality, map[string]any) {
		return daetcd.Personality(), map[string]any{"etcd": map[string]any{"endpoints": e.eps(), "prefix": e.prefix, "nodeName": "node-a", "machineIDFile": e.machine}}
	}}
}

// op is an operation of node-a, for tests that look inside the store.
func (e etcdSubject) op(c alloctest.Call) *Operation {
	cl := etcdkv.New(etcdkv.Config{Endpoints: e.eps(), Timeout: 10 * time.Second})
	return NewTestOperation(cl, e.prefix, "node-a", "contract-machine", "h", c.Att, c.Now)
}

func (e etcdSubject) Add(c alloctest.Call, targets []alloc.Target) ([]netip.Prefix, error) {
	return e.cni().Add(c, targets)
}

func (e etcdSubject) Del(c alloctest.Call, hints []netip.Addr) error { return e.cni().Del(c, hints) }

func (e etcdSubject) GC(live []alloc.Attachment, now time.Time) error { return e.cni().GC(live, now) }

func (e etcdSubject) admin(now time.Time) *Operator {
	a, err := OpenOperator(clusteraccess.Access{Endpoints: e.eps(), Prefix: e.prefix})
	if err != nil {
		e.t.Fatal(err)
	}
	a.SetNow(now)
	return a
}

func (e etcdSubject) ReleaseKey(key, ifname string, now time.Time) error {
	_, err := e.admin(now).Release(contractScope, alloc.ReleaseRequest{Key: key, IfName: ifname}, false)
	return err
}

func (e etcdSubject) ReleaseAddr(ip netip.Addr, now time.Time) error {
	_, err := e.admin(now).Release(alloctest.ScopeOf(ip), alloc.ReleaseRequest{Addr: ip}, false)
	return err
}
