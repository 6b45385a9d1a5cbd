package hostlocal

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

var holdID = alloc.StickyID("ns/web-0", "eth0")

// nothingValid is GC's rule with no valid attachment.
var nothingValid = alloc.NewKeepSet("", nil).Keeps

// web0 is the target of the records of key ns/web-0 (holdID).
func web0(rs addrspace.RangeSet) alloc.Target {
	return alloc.Target{Label: "r", Scope: alloc.Scope{Network: "n"}, Set: rs}
}

// stickyStep runs f on a freshly opened disk and closes it.
func stickyStep(t *testing.T, dir string, f func(d *Disk)) {
	t.Helper()
	diskHarness{dir}.with(t, func(_ *alloc.Allocator, d *Disk) { f(d) })
}

func mustHold(t *testing.T, d *Disk) *alloc.HoldRecord {
	t.Helper()
	e, err := alloc.LookupHold(d, holdID)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A hold's life on one disk: reserve + record, DEL (HoldOnDel), take-over by
// a new container, a failed ADD's undo, expiry (CollectGC); the index
// follows every file rewrite, and the address is never free meanwhile.
func TestHoldLifecycle(t *testing.T) {
	dir := t.TempDir()
	rs := alloctest.Small(t)
	ip := mustAlloc(t, diskHarness{dir}, alloctest.CidA, rs)
	now := time.Now()
	stickyStep(t, dir, func(d *Disk) {
		if err := d.WriteHold(holdID, alloc.Hold{Key: "ns/web-0", IfName: "eth0", Address: ip.String(), Owner: alloctest.CidA.ContainerID, HoldFor: "1m0s"}); err != nil {
			t.Fatal(err)
		}
		hs, err := alloc.KeyedOf(d, alloctest.CidA)
		if err != nil || len(hs) != 1 {
			t.Fatalf("KeyedOf = %v, %v", hs, err)
		}
		if held, err := alloc.HoldOnDel(d, alloctest.CidA, "ns/web-0", now); err != nil || len(held) != 1 || held[0] != ip {
			t.Fatalf("HoldOnDel = %v, %v", held, err)
		}
	})
	stickyStep(t, dir, func(d *Disk) {
		e := mustHold(t, d)
		if e.Stale != "" || !e.Held() || e.LastOwner != alloctest.CidA.ContainerID {
			t.Fatalf("after DEL: %+v", e)
		}
		if got, _ := d.ByAttachment(alloctest.CidA); len(got) != 0 {
			t.Errorf("index still gives %v to %v", got, alloctest.CidA)
		}
		// Round robin skips it: the range's other addresses go first.
		al := alloc.New(d)
		for _, id := range []string{"f1", "f2", "f3", "f4"} {
			p, _, err := al.Allocate(Attachment{ContainerID: id, IfName: "eth0"}, 0, rs, netip.Addr{}, "r")
			if err != nil || p.Addr() == ip {
				t.Fatalf("ADD of %s: %s, %v", id, p, err)
			}
		}
		var u alloc.Undo
		if _, _, err := alloc.AllocateKeyed(d, alloctest.CidB, web0(rs), alloc.Keyed{Key: "ns/web-0", HoldFor: time.Minute}, now, &u); err != nil {
			t.Fatal(err)
		}
	})
	stickyStep(t, dir, func(d *Disk) {
		if got, _ := d.ByAttachment(alloctest.CidB); len(got) != 1 || got[0] != ip {
			t.Errorf("index after claim: %v", got)
		}
		e := mustHold(t, d)
		if e.Owner != alloctest.CidB.ContainerID {
			t.Fatalf("after claim: %+v", e)
		}
		// CidB's DEL, then an ADD that takes the hold over and fails
		// (its undo gives the address back).
		if held, err := alloc.HoldOnDel(d, alloctest.CidB, "ns/web-0", now); err != nil || len(held) != 1 || held[0] != ip {
			t.Fatalf("HoldOnDel = %v, %v", held, err)
		}
		var u alloc.Undo
		if _, _, err := alloc.AllocateKeyed(d, alloctest.CidA, web0(rs), alloc.Keyed{Key: "ns/web-0", HoldFor: time.Minute}, now, &u); err != nil {
			t.Fatal(err)
		}
		if err := u.Run(alloctest.CidA); err != nil {
			t.Fatal(err)
		}
	})
	stickyStep(t, dir, func(d *Disk) {
		e := mustHold(t, d)
		if !e.Held() || e.Stale != "" {
			t.Fatalf("after unclaim: %+v", e)
		}
		// The expired hold first, then the four reservations nobody keeps.
		freed, held, err := alloc.CollectGC(d, nothingValid, now.Add(2*time.Minute))
		if err != nil || len(freed) != 5 || freed[0] != ip || slices.Contains(freed[1:], ip) || len(held) != 0 {
			t.Fatalf("CollectGC = %v %v %v", freed, held, err)
		}
	})
	if _, err := os.Stat(filepath.Join(dir, ip.String())); !os.IsNotExist(err) {
		t.Errorf("expired hold's file still there: %v", err)
	}
	if e, _ := alloc.ListHolds(Reader(dir)); len(e) != 0 {
		t.Errorf("records after expiry: %+v", e)
	}
}

// Each write order, interrupted after its first write (what kill -9
// between the two leaves), reads back as a consistent state.
func TestHoldInterrupted(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.2")
	rec := func(owner, last string) alloc.Hold {
		return alloc.Hold{Key: "ns/web-0", IfName: "eth0", Address: ip.String(), Owner: owner, LastOwner: last}
	}
	for _, tt := range []struct {
		name      string
		file      string // "" = none
		h         alloc.Hold
		wantOwner string // effective, "-" = stale
		freeable  bool   // GC with nothing valid frees the address
	}{
		{"new ADD: file only", "c1\r\neth0", alloc.Hold{}, "-", true},
		{"claim: record only", "_sticky\r\n" + holdID, rec("c2", "c1"), "", false},
		{"DEL: record only", "c1\r\neth0", rec("", "c1"), "c1", false},
		{"expiry: file removed only", "", rec("", "c1"), "-", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			stickyStep(t, dir, func(d *Disk) {})
			if tt.file != "" {
				if err := os.WriteFile(filepath.Join(dir, ip.String()), []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stickyStep(t, dir, func(d *Disk) {
				if tt.h.Address != "" {
					if err := d.WriteHold(holdID, tt.h); err != nil {
						t.Fatal(err)
					}
				}
			})
			stickyStep(t, dir, func(d *Disk) {
				e := mustHold(t, d)
				switch {
				case tt.wantOwner == "-" && e != nil && e.Stale == "":
					t.Errorf("record %+v counts, want stale", e)
				case tt.wantOwner != "-" && (e == nil || e.Stale != "" || e.Owner != tt.wantOwner):
					t.Errorf("record %+v, want owner %q", e, tt.wantOwner)
				}
				freed, _, err := alloc.CollectGC(d, nothingValid, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if (len(freed) > 0) != tt.freeable {
					t.Errorf("GC freed %v, want freeable=%v", freed, tt.freeable)
				}
			})
			// After GC every record that remains is valid, and every
			// "_sticky" file has its record.
			hs, _ := alloc.ListHolds(Reader(dir))
			for _, e := range hs {
				if e.Stale != "" {
					t.Errorf("GC left a stale record: %+v", e)
				}
			}
		})
	}
}
