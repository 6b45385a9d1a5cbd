package etcdstore_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	. "github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// tenantCase is a test's store on the in-memory etcd, with pool p over
// set and tenant namespace=a's quota.
type tenantCase struct {
	t  *testing.T
	e  etcdSubject
	tg alloc.Target
	q  *pool.Quota
}

func newTenantCase(t *testing.T, set addrspace.RangeConfig) tenantCase {
	return tenantCase{t: t, e: etcdAt(t, cluster.Endpoints(), "/tenant-gc/"+t.Name()+"/"),
		tg: alloc.Target{Label: "pool p", Scope: contractScope, Set: alloctest.MustSet(t, set)},
		q:  &pool.Quota{Tenant: "namespace=a", Rule: "ipam.rules[0]", Max: 1000}}
}

func (c tenantCase) call(cid, network, key string) alloctest.Call {
	call := alloctest.Call{Att: alloc.Attachment{ContainerID: cid, IfName: "eth0", Network: network}, Now: time.Now(), Quota: c.q}
	if key != "" {
		call.Key, call.HoldFor = key, time.Hour
	}
	return call
}

// add claims for the tenant: cid on eth0 of network (key: a sticky one).
func (c tenantCase) add(cid, network, key string) netip.Addr {
	c.t.Helper()
	got, err := c.e.Add(c.call(cid, network, key), []alloc.Target{c.tg})
	if err != nil || len(got) != 1 {
		c.t.Fatalf("ADD %s: %v %v", cid, got, err)
	}
	return got[0].Addr()
}

func (c tenantCase) del(cid, network, key string) {
	c.t.Helper()
	if err := c.e.Del(c.call(cid, network, key), nil); err != nil {
		c.t.Fatalf("DEL %s: %v", cid, err)
	}
}

// records are the addresses of the tenant records in etcd, sorted.
func (c tenantCase) records() []string {
	c.t.Helper()
	keys, _ := cluster.Keys(c.e.prefix + "tenant/")
	var out []string
	for _, k := range keys {
		out = append(out, k[strings.LastIndexByte(k, '/')+1:])
	}
	return out
}

// count is the tenant's count, as an ADD reads it, and how many records
// it found counting nothing.
func (c tenantCase) count() (int, int) {
	c.t.Helper()
	n, stale, err := c.e.op(c.call("x", "net", "")).Count(c.q, []alloc.Target{c.tg})
	if err != nil {
		c.t.Fatal(err)
	}
	return n, stale
}

func (c tenantCase) gc(live ...alloc.Attachment) {
	c.t.Helper()
	if err := c.e.GC(live, time.Now()); err != nil {
		c.t.Fatalf("GC: %v", err)
	}
}

// A tenant that claims, DELs and never claims again: GC removes its
// record, which counted nothing, and a count then reads none.
func TestGCRemovesTenantRecordsThatCountNothing(t *testing.T) {
	c := newTenantCase(t, addrspace.RangeConfig{Subnet: "10.238.1.0/24"})
	a := c.add("c0", "net", "")
	c.del("c0", "net", "")
	if got := c.records(); !slices.Equal(got, []string{a.String()}) {
		t.Fatalf("after DEL: records %v, want %s's (DEL writes nothing for quotas)", got, a)
	}
	c.gc()
	if got := c.records(); len(got) != 0 {
		t.Fatalf("after GC: records %v, want none", got)
	}
	if n, stale := c.count(); n != 0 || stale != 0 {
		t.Fatalf("count %d with %d records counting nothing; want 0 and 0", n, stale)
	}
}

// GC keeps every record that counts: a live claim's (kept by the valid
// attachments), a sticky hold's (holds count), and the claim of another
// network than the GC's (records are cluster-wide, every tenant's swept);
// only the released claim's goes.
func TestGCKeepsTenantRecordsThatCount(t *testing.T) {
	c := newTenantCase(t, addrspace.RangeConfig{Subnet: "10.238.2.0/24"})
	live := c.add("live", "net", "")
	held := c.add("sticky", "net", "k")
	c.del("sticky", "net", "k")
	other := c.add("other", "other-net", "")
	c.add("dead", "net", "")
	c.del("dead", "net", "")
	c.gc(alloc.Attachment{ContainerID: "live", IfName: "eth0"})
	want := []string{live.String(), held.String(), other.String()}
	slices.Sort(want)
	if got := c.records(); !slices.Equal(got, want) {
		t.Fatalf("after GC: records %v, want the live, held and other network's %v", got, want)
	}
	if n, stale := c.count(); n != 3 || stale != 0 {
		t.Fatalf("count %d with %d records counting nothing; want 3 and 0", n, stale)
	}
}

// A record judged dead and then written again by a new claim of its
// address for the tenant (a claim racing the sweep) is not deleted: the
// delete is guarded by the mod revision the sweep read.
func TestSweepSparesARecordClaimedAgain(t *testing.T) {
	c := newTenantCase(t, addrspace.RangeConfig{Subnet: "10.238.3.0/24", RangeStart: "10.238.3.10", RangeEnd: "10.238.3.10"})
	a := c.add("c0", "net", "")
	c.del("c0", "net", "")
	op := c.e.op(c.call("gc", "net", ""))
	dead, err := op.DeadTenantRecords()
	if err != nil || len(dead) != 1 {
		t.Fatalf("judged dead: %d, %v; want c0's record", len(dead), err)
	}
	if again := c.add("c1", "net", ""); again != a {
		t.Fatalf("c1 got %s, want the pool's one address %s", again, a)
	}
	if err := op.Apply(dead); err != nil {
		t.Fatal(err)
	}
	if got := c.records(); !slices.Equal(got, []string{a.String()}) {
		t.Fatalf("records %v: c1's record of %s was deleted by the stale judgement", got, a)
	}
	if n, _ := c.count(); n != 1 {
		t.Fatalf("count %d, want c1's 1", n)
	}
}

// More dead records than one read or one transaction may hold (etcd's
// default --max-txn-ops, which the in-memory etcd enforces) all go.
func TestGCRemovesManyTenantRecords(t *testing.T) {
	c := newTenantCase(t, addrspace.RangeConfig{Subnet: "10.238.4.0/23"})
	const n = 300
	for i := range n {
		c.add(fmt.Sprint("c", i), "net", "")
	}
	if got := len(c.records()); got != n {
		t.Fatalf("%d records, want %d", got, n)
	}
	c.gc() // releases the 300 claims, then their records
	if got := c.records(); len(got) != 0 {
		t.Fatalf("after GC: %d records left, want none", len(got))
	}
	if n, stale := c.count(); n != 0 || stale != 0 {
		t.Fatalf("count %d with %d records counting nothing; want 0 and 0", n, stale)
	}
}

// The CNI GC and an operator's gc --apply (a node gone for good) leave
// the tenants alike, through one sweep (sweepTenants): from the same
// state (a live claim, a dead one GC releases, a DEL's record that counts
// nothing), each keeps the live claim's record alone, and a count then
// reads it and nothing stale. gc's plan changes nothing.
func TestGCsRemoveTenantRecordsAlike(t *testing.T) {
	live := alloc.Attachment{ContainerID: "live", IfName: "eth0"}
	for i, gc := range map[string]func(c tenantCase) error{
		"the CNI GC": func(c tenantCase) error { return c.e.GC([]alloc.Attachment{live}, time.Now()) },
		"gc --etcd --apply": func(c tenantCase) error {
			ad := c.e.admin(time.Now())
			if plan, err := ad.GC("node-a", "", "", alloc.NewKeepSet("", []alloc.Attachment{live}), false, false); err != nil || len(plan) != 1 || len(c.records()) != 3 {
				t.Fatalf("plan %+v, %v; records %v", plan, err, c.records())
			}
			_, err := ad.GC("node-a", "", "", alloc.NewKeepSet("", []alloc.Attachment{live}), true, false)
			return err
		},
	} {
		t.Run(i, func(t *testing.T) {
			c := newTenantCase(t, addrspace.RangeConfig{Subnet: "10.238.5.0/24"})
			kept := c.add("live", "net", "")
			c.add("c0", "net", "")
			c.add("c1", "net", "")
			c.del("c1", "net", "")
			if err := gc(c); err != nil {
				t.Fatal(err)
			}
			if got := c.records(); !slices.Equal(got, []string{kept.String()}) {
				t.Fatalf("after GC: records %v, want live's %s alone", got, kept)
			}
			if n, stale := c.count(); n != 1 || stale != 0 || len(c.versions()) != 1 {
				t.Fatalf("count %d with %d records counting nothing, version keys %v; want 1, 0 and the tenant's", n, stale, c.versions())
			}
		})
	}
}

// versions are the tenants' version keys in etcd.
func (c tenantCase) versions() []string {
	c.t.Helper()
	keys, _ := cluster.Keys(c.e.prefix + "tenantv/")
	return keys
}

// A tenant's version key goes with its last record that counts nothing,
// so tenants that come and go leave nothing; a tenant with a record that
// counts keeps it; a claim after the sweep writes it again and the quota
// holds; and a claim that rewrites it between the sweep's read and its
// delete keeps it (the delete is guarded by the revision read).
func TestGCRemovesVersionKeysNothingNeeds(t *testing.T) {
	c := newTenantCase(t, addrspace.RangeConfig{Subnet: "10.238.6.0/24"})
	c.add("c0", "net", "")
	c.del("c0", "net", "")
	if len(c.versions()) != 1 {
		t.Fatalf("version keys after a claim: %v", c.versions())
	}
	c.gc()
	if got := c.versions(); len(got) != 0 {
		t.Fatalf("after GC of a tenant with no record left: version keys %v", got)
	}
	c.add("c1", "net", "")
	if n, _ := c.count(); n != 1 || len(c.versions()) != 1 {
		t.Fatalf("after a new claim: count %d, version keys %v", n, c.versions())
	}
	c.gc(alloc.Attachment{ContainerID: "c1", IfName: "eth0"})
	if len(c.versions()) != 1 {
		t.Fatalf("GC removed the version key of a tenant whose record counts: %v", c.versions())
	}

	c.del("c1", "net", "")
	op := c.e.op(c.call("gc", "net", ""))
	versions, err := op.Client().List(op.VersionsRoot(), true)
	if err != nil || len(versions) != 1 {
		t.Fatalf("versions %v %v", versions, err)
	}
	c.add("c2", "net", "") // rewrites the version key after the read
	if err := op.Apply([]etcdkv.Txn{RemoveRecord(versions[0])}); err != nil {
		t.Fatal(err)
	}
	if len(c.versions()) != 1 {
		t.Fatal("the version key read before a claim rewrote it was deleted")
	}
}
