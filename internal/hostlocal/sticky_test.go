package hostlocal

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

var holdID = alloc.StickyID("ns/web-0", "eth0")

// nothingValid is GC's rule with no valid attachment.
var nothingValid = alloc.NewKeepSet("", nil).Keeps

// The reconciliation rule, one row per (record, file) pair a completed
// operation or a kill -9 between two writes can leave.
func TestJudge(t *testing.T) {
	reserved := alloc.Hold{Key: "k", IfName: "eth0", Address: "10.0.0.2", Network: "n", Owner: "c1"}
	held := alloc.Hold{Key: "k", IfName: "eth0", Address: "10.0.0.2", Network: "n", LastOwner: "c1"}
	claimedMid := held
	claimedMid.Owner = "c2"
	for _, tt := range []struct {
		name      string
		h         alloc.Hold
		owner     Attachment
		exists    bool
		wantOwner string
		stale     bool
	}{
		{"reserved", reserved, cidOn("c1", "eth0"), true, "c1", false},
		{"held", held, StickyOwner(holdID), true, "", false},
		{"claim: record written, file not yet", claimedMid, StickyOwner(holdID), true, "", false},
		{"claim done", claimedMid, cidOn("c2", "eth0"), true, "c2", false},
		{"DEL: record written, file not yet", held, cidOn("c1", "eth0"), true, "c1", false},
		{"expiry: file removed, record not yet", held, Attachment{}, false, "", true},
		{"new: record removed on rollback", reserved, Attachment{}, false, "", true},
		{"someone else's file", reserved, cidOn("c9", "eth0"), true, "", true},
		{"held record, other container's file", held, cidOn("c9", "eth0"), true, "", true},
		{"another hold's file", held, StickyOwner(strings.Repeat("0", 32)), true, "", true},
		{"other interface", reserved, cidOn("c1", "net1"), true, "", true},
		{"other network in a pool", reserved, Attachment{ContainerID: "c1", IfName: "eth0", Network: "m"}, true, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, stale := judge(holdID, tt.h, tt.owner, tt.exists)
			if (stale != "") != tt.stale || (!tt.stale && got.Owner != tt.wantOwner) {
				t.Errorf("judge = %+v, %q; want owner %q stale %v", got, stale, tt.wantOwner, tt.stale)
			}
		})
	}
}

func cidOn(id, ifname string) Attachment { return Attachment{ContainerID: id, IfName: ifname} }

// stickyStep runs f on a freshly opened disk and closes it.
func stickyStep(t *testing.T, dir string, f func(d *Disk)) {
	t.Helper()
	diskHarness{dir}.with(t, func(_ *alloc.Allocator, d *Disk) { f(d) })
}

func mustHold(t *testing.T, d *Disk) *HoldEntry {
	t.Helper()
	e, err := d.Hold(holdID)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A hold's life on one disk: reserve + record, DEL (MakeHold), claim by a
// new container, failed ADD's Unclaim, expiry (FreeHold); the index
// follows every file rewrite, and the address is never free meanwhile.
func TestHoldLifecycle(t *testing.T) {
	dir := t.TempDir()
	rs := alloctest.Small(t)
	ip := mustAlloc(t, diskHarness{dir}, alloctest.CidA, rs)
	now := time.Now()
	stickyStep(t, dir, func(d *Disk) {
		if err := d.PutHold(holdID, alloc.Hold{Key: "ns/web-0", IfName: "eth0", Address: ip.String(), Owner: alloctest.CidA.ContainerID, HoldFor: "1m0s"}); err != nil {
			t.Fatal(err)
		}
		hs, err := d.HoldsOf(alloctest.CidA)
		if err != nil || len(hs) != 1 {
			t.Fatalf("HoldsOf = %v, %v", hs, err)
		}
		if err := d.MakeHold(hs[0], hs[0].Release(now)); err != nil {
			t.Fatal(err)
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
		if err := d.ClaimHold(*e, alloctest.CidB, "1m0s"); err != nil {
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
		held := *e
		held.Owner = ""
		if err := d.Unclaim(held, alloctest.CidB); err != nil {
			t.Fatal(err)
		}
	})
	stickyStep(t, dir, func(d *Disk) {
		e := mustHold(t, d)
		if !e.Held() || e.Stale != "" {
			t.Fatalf("after unclaim: %+v", e)
		}
		freed, held, err := d.GCHolds(nothingValid, now.Add(2*time.Minute))
		if err != nil || len(freed) != 1 || len(held) != 0 {
			t.Fatalf("GCHolds = %v %v %v", freed, held, err)
		}
	})
	if _, err := os.Stat(filepath.Join(dir, ip.String())); !os.IsNotExist(err) {
		t.Errorf("expired hold's file still there: %v", err)
	}
	if e, _ := ReadHolds(dir); len(e) != 0 {
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
					if err := d.PutHold(holdID, tt.h); err != nil {
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
				_, _, err := d.GCHolds(nothingValid, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				freed, err := alloc.GC(d, nothingValid)
				if err != nil {
					t.Fatal(err)
				}
				if (len(freed) > 0) != tt.freeable {
					t.Errorf("GC freed %v, want freeable=%v", freed, tt.freeable)
				}
			})
			// After GC every record that remains is valid, and every
			// "_sticky" file has its record.
			hs, _ := ReadHolds(dir)
			for _, e := range hs {
				if e.Stale != "" {
					t.Errorf("GC left a stale record: %+v", e)
				}
			}
		})
	}
}
