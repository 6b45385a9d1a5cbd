//go:build etcdcluster

package etcdstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// A tenant with more addresses than one etcd transaction may read
// (--max-txn-ops, 128 by default) is counted exactly, on a real cluster,
// and a quota past them still refuses with 106; GC then removes all their
// records.
func TestQuotaCountPastMaxTxnOps(t *testing.T) {
	e := etcdAt(t, startCluster(t), "/quota-count-test/")
	tg := alloc.Target{Label: "pool p", Scope: alloc.Scope{Pool: "p"}, Set: alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.237.0.0/24"})}
	q := &pool.Quota{Tenant: "namespace=big", Rule: "ipam.rules[0]", Max: 150}
	for i := range 150 {
		call := alloctest.Call{Att: alloc.Attachment{ContainerID: fmt.Sprint("c", i), IfName: "eth0", Network: "net"}, Now: time.Now(), Quota: q}
		if _, err := e.Add(call, []alloc.Target{tg}); err != nil {
			t.Fatalf("ADD %d: %v", i, err)
		}
	}
	op := e.op(alloctest.Call{Att: alloc.Attachment{ContainerID: "x", IfName: "eth0", Network: "net"}, Now: time.Now()})
	if n, _, err := op.Count(q, []alloc.Target{tg}); err != nil || n != 150 {
		t.Fatalf("count = %d, %v; want 150", n, err)
	}
	last := alloctest.Call{Att: alloc.Attachment{ContainerID: "c150", IfName: "eth0", Network: "net"}, Now: time.Now(), Quota: q}
	_, err := e.Add(last, []alloc.Target{tg})
	alloctest.AssertCode(t, err, 106)
	// GC frees the 150 claims, then removes their 150 records, in
	// transactions the cluster accepts.
	if err := e.GC(nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, stale, err := op.Count(q, []alloc.Target{tg}); err != nil || n != 0 || stale != 0 {
		t.Fatalf("after GC: count = %d (%d records counting nothing), %v; want 0 and none", n, stale, err)
	}
}
