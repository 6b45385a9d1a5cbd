package alloc_test

import (
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// PlanDel is the DEL of one reservation for both stores: each case is
// what the disk's HoldOnDel and etcd's DEL must do with it.
func TestPlanDel(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	owned := alloc.Hold{Node: "n1", Owner: "src", IfName: "eth0", Network: "vms", Address: "10.0.0.2", Key: vmKey, HoldFor: "30m0s"}
	shared := owned
	shared.SecondNode, shared.Second, shared.SecondMigration = "n2", "tgt", "m1"
	held := owned.HeldFrom(now.Add(-time.Minute))
	// Written names src, but the address is tgt's: the source's DEL
	// stopped between the hand-over's two writes.
	unfinished := alloc.HoldRecord{Hold: shared.HandedOver(), Written: shared}
	rec := func(h alloc.Hold) *alloc.HoldRecord { return &alloc.HoldRecord{Hold: h, Written: h} }
	tgt := alloc.Attachment{ContainerID: "tgt", IfName: "eth0", Network: "vms"}
	for _, c := range []struct {
		name string
		a    alloc.Attachment
		node string
		v    alloc.DelView
		step alloc.DelStep
		hold alloc.Hold
	}{
		{"plain", source, "n1", alloc.DelView{Network: "vms"}, alloc.DelFree, alloc.Hold{}},
		{"plain, another network", source, "n1", alloc.DelView{Network: "web"}, alloc.DelSkip, alloc.Hold{}},
		{"stale record", source, "n1", alloc.DelView{Record: &alloc.HoldRecord{Hold: owned, Stale: "gone"}}, alloc.DelFree, alloc.Hold{}},
		{"owner alone", source, "n1", alloc.DelView{Record: rec(owned)}, alloc.DelToHold, owned.HeldFrom(now)},
		{"owner, another network", alloc.Attachment{ContainerID: "src", IfName: "eth0", Network: "web"}, "n1", alloc.DelView{Record: rec(owned)}, alloc.DelSkip, alloc.Hold{}},
		{"owner with a target", source, "n1", alloc.DelView{Record: rec(shared)}, alloc.DelHandOver, shared.HandedOver()},
		{"target", tgt, "n2", alloc.DelView{Network: "vms", Record: rec(shared)}, alloc.DelDropSecond, owned},
		{"target, on another node", tgt, "n1", alloc.DelView{Record: rec(shared)}, alloc.DelSettle, shared},
		{"owner's container on another node", source, "n2", alloc.DelView{Record: rec(owned)}, alloc.DelSettle, owned},
		{"another interface", alloc.Attachment{ContainerID: "src", IfName: "net1", Network: "vms"}, "n1", alloc.DelView{Record: rec(owned)}, alloc.DelSettle, owned},
		{"a hold", source, "n1", alloc.DelView{Record: rec(held)}, alloc.DelSettle, held},
		{"unfinished hand-over, retried by the source", source, "n1", alloc.DelView{Record: &unfinished}, alloc.DelSettle, shared.HandedOver()},
	} {
		p := alloc.PlanDel(c.a, c.node, c.v, now)
		if gone := map[bool]alloc.DelStep{true: alloc.DelFree}[c.step == alloc.DelToHold]; p.Gone != gone {
			t.Errorf("%s: if the hold is gone: %d, want %d", c.name, p.Gone, gone)
		}
		if p.Step != c.step || p.Hold != c.hold {
			t.Errorf("%s: %+v, want step %d with %+v", c.name, p, c.step, c.hold)
		}
	}
	if h := owned.HeldFrom(now); h.Owner != "" || h.LastOwner != "src" || !h.Expires.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("held: %+v", h)
	}
}

// UndoHold and KeyRecord are the records a failed ADD puts back and a
// keyed reservation writes, on both stores.
func TestUndoHoldAndKeyRecord(t *testing.T) {
	if h := alloc.UndoHold(nil, false); h != nil {
		t.Fatalf("a new record is put back: %+v", h)
	}
	found := alloc.Hold{IfName: "eth0", Network: "vms", Address: "10.0.0.2", Key: vmKey, LastOwner: "old", Expires: time.Unix(1e9, 0)}
	if h := alloc.UndoHold(&found, false); h == nil || *h != found {
		t.Fatalf("a hold taken over is not put back as found: %+v", h)
	}
	shared := alloc.Hold{Owner: "src", IfName: "eth0", Network: "vms", Address: "10.0.0.2", Key: vmKey, Second: "tgt", SecondMigration: "m1"}
	if h := alloc.UndoHold(&shared, true); h == nil || *h != shared.WithoutSecond() {
		t.Fatalf("a share is not dropped: %+v", h)
	}
	k := alloc.Keyed{Key: vmKey, HoldFor: time.Hour, Migration: "m2"}
	fresh := alloc.KeyRecord(nil, target, "n2", "10.0.0.9", k)
	if want := (alloc.Hold{Node: "n2", Owner: "tgt", IfName: "eth0", Network: "vms", Address: "10.0.0.9", Key: vmKey, HoldFor: "1h0m0s", Migration: "m2"}); fresh != want {
		t.Fatalf("new record: %+v, want %+v", fresh, want)
	}
	taken := found
	taken.Second = "x"
	got := alloc.KeyRecord(&taken, target, "", "10.0.0.2", k)
	if got.Owner != "tgt" || got.LastOwner != "old" || !got.Expires.Equal(found.Expires) || got.Second != "" || got.HoldFor != "1h0m0s" || got.Migration != "m2" {
		t.Fatalf("taken over: %+v", got)
	}
}
