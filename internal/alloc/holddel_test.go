package alloc_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// writesCounted is a MemStore that counts record writes.
type writesCounted struct {
	*alloctest.MemStore
	writes int
}

func (w *writesCounted) WriteHold(id string, h alloc.Hold) error {
	w.writes++
	return w.MemStore.WriteHold(id, h)
}

const vmKey = "vms/vm/pg"

var (
	handoverIP = netip.MustParseAddr("10.0.0.2")
	handoverID = alloc.HoldID(vmKey, "eth0", 0)
	source     = alloc.Attachment{ContainerID: "src", IfName: "eth0", Network: "vms"}
	target     = alloc.Attachment{ContainerID: "tgt", IfName: "eth0", Network: "vms"}
)

// plant is a store holding record h of vmKey and ip reserved by owner.
func plant(t *testing.T, h alloc.Hold, owner alloc.Attachment) *writesCounted {
	t.Helper()
	m := &writesCounted{MemStore: alloctest.NewMemStore()}
	if ok, err := m.Reserve(owner, handoverIP); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := m.MemStore.WriteHold(handoverID, h); err != nil {
		t.Fatal(err)
	}
	return m
}

func record(owner, second, last string) alloc.Hold {
	h := alloc.Hold{Key: vmKey, IfName: "eth0", Network: "vms", Address: handoverIP.String(), Owner: owner, LastOwner: last, HoldFor: "0s"}
	if second != "" {
		h.Second, h.SecondMigration = second, "mig-1"
	}
	return h
}

// Which states a crash between two writes leaves are unfinished, and
// what settling them writes: the record as judged.
func TestUnfinished(t *testing.T) {
	for _, tt := range []struct {
		name    string
		h       alloc.Hold
		file    alloc.Attachment
		want    string // in Unfinished, "" for finished
		settled alloc.Hold
	}{
		{"migrating", record("src", "tgt", ""), source, "", record("src", "tgt", "")},
		{"source's DEL: reservation handed over, record not yet", record("src", "tgt", ""), target, "hand-over",
			alloc.Hold{Key: vmKey, IfName: "eth0", Network: "vms", Address: handoverIP.String(), Owner: "tgt", Migration: "mig-1", LastOwner: "src", HoldFor: "0s"}},
		{"handed over", record("tgt", "", "src"), target, "", record("tgt", "", "src")},
		{"take-over: record written, reservation not yet", record("tgt", "", "src"), alloc.HoldOwner(handoverID), "has no reservation", record("", "", "src")},
		{"DEL: record held, reservation not yet (its owner's DEL finishes it)", record("", "", "src"), source, "", record("", "", "src")},
		{"held", record("", "", "src"), alloc.HoldOwner(handoverID), "", record("", "", "src")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := plant(t, tt.h, tt.file)
			e, err := alloc.LookupHold(m, handoverID)
			if err != nil || e == nil || e.Stale != "" {
				t.Fatalf("record %+v %v", e, err)
			}
			if got := e.Unfinished(); (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Unfinished = %q, want %q", got, tt.want)
			}
			if err := alloc.SettleHold(m, *e); err != nil {
				t.Fatal(err)
			}
			if got, _ := m.ReadHold(handoverID); *got != tt.settled {
				t.Errorf("settled to %+v, want %+v", *got, tt.settled)
			}
			if e, _ = alloc.LookupHold(m, handoverID); e.Unfinished() != "" {
				t.Errorf("still unfinished once settled: %s", e.Unfinished())
			}
		})
	}
}

// Issue 37: a source's DEL killed between the hand-over's two writes,
// retried with whatever arguments (no key, the VM's key, another
// source's key: a runtime's DEL after a restart may lack the pod's name
// and annotations), finishes the hand-over once, then writes nothing.
func TestHoldOnDelFinishesHandover(t *testing.T) {
	for _, key := range []string{"", vmKey, "vms/virt-launcher-src"} {
		m := plant(t, record("src", "tgt", ""), target)
		for try := range 3 {
			held, err := alloc.HoldOnDel(m, source, key, time.Now())
			if err != nil || len(held) != 0 {
				t.Fatalf("key %q: DEL %d: held %v, %v", key, try, held, err)
			}
		}
		h, _ := m.ReadHold(handoverID)
		if h.Owner != "tgt" || h.Second != "" || h.LastOwner != "src" || m.writes != 1 {
			t.Errorf("key %q: after the DELs the record is %+v (%d writes), want tgt the sole owner, written once", key, *h, m.writes)
		}
		if owner, _, _ := m.Owner(handoverIP); owner != target {
			t.Errorf("key %q: the address is %v's", key, owner)
		}
	}
}

// A target's DEL whose arguments give another key than the VM's still
// ends its share: the records that name it are found from the state.
func TestHoldOnDelOfTargetWithAnotherKey(t *testing.T) {
	m := plant(t, record("src", "tgt", ""), source)
	if _, err := alloc.HoldOnDel(m, target, "vms/virt-launcher-tgt", time.Now()); err != nil {
		t.Fatal(err)
	}
	if h, _ := m.ReadHold(handoverID); h.Owner != "src" || h.Second != "" {
		t.Errorf("after the target's DEL the record is %+v, want src the sole owner", *h)
	}
}
