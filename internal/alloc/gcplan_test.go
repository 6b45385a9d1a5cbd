package alloc

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPlanClaimsOneClaim(t *testing.T) {
	live := Attachment{ContainerID: "live", IfName: "eth0"}
	gone := Attachment{ContainerID: "gone", IfName: "eth0"}
	other := Attachment{ContainerID: "gone", IfName: "eth1", Network: "n2"}
	keep := NewKeepSet("", []Attachment{live}).Keeps
	for _, tc := range []struct {
		name    string
		owner   Attachment
		shared  bool
		network string
		want    string
	}{
		{"kept", live, false, "", "kept"},
		{"kept and shared", live, true, "", "kept"},
		{"a hold, whatever keep says", HoldOwner("k"), false, "", "kept"},
		{"another network's", other, false, "n1", "kept"},
		{"not kept", gone, false, "", "released"},
		{"not kept, shared", gone, true, "", "share ends"},
	} {
		p := PlanClaims(ClaimsView{Network: tc.network, Claims: []GCClaim{{Owner: tc.owner, Shared: tc.shared}}}, keep, time.Now())
		got := "kept"
		if len(p.Release) > 0 {
			got = "released"
		}
		if len(p.EndShare) > 0 {
			got = "share ends"
		}
		if got != tc.want {
			t.Errorf("%s: PlanClaims = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A GC on one node plans over that node's claims alone: another node's
// stay, whatever keep says, since that node's runtime answers for them.
func TestPlanClaimsAnotherNode(t *testing.T) {
	gone := Attachment{ContainerID: "gone", IfName: "eth0"}
	v := ClaimsView{Node: "n1", Claims: []GCClaim{
		{Owner: gone, Node: "n1", Ref: "mine"}, {Owner: gone, Node: "n2", Ref: "other's"}, {Owner: gone, Node: "n2", Shared: true, Ref: "other's share"},
	}}
	p := PlanClaims(v, NewKeepSet("", nil).Keeps, time.Now())
	if len(p.Release) != 1 || p.Release[0].Ref != "mine" || len(p.EndShare) != 0 {
		t.Errorf("released %v and ended %v, want only this node's claim released", p.Release, p.EndShare)
	}
}

func TestHoldEnds(t *testing.T) {
	now := time.Now()
	h := Hold{Key: "vm", Network: "n1", Expires: now.Add(-time.Second)}
	if !HoldEnds(h, "n1", now) || !HoldEnds(h, "", now) || HoldEnds(h, "n2", now) {
		t.Errorf("an expired hold of n1: ends in n1 and every network, not in n2")
	}
	if HoldEnds(Hold{Key: "vm", Expires: now.Add(time.Second)}, "", now) || HoldEnds(Hold{Key: "vm"}, "", now) {
		t.Errorf("an unexpired hold, or one without expiry, ended")
	}
	if HoldEnds(Hold{Key: "vm", Owner: "c1", Expires: now.Add(-time.Second)}, "", now) {
		t.Errorf("a reservation's record ended as a hold")
	}
}

// An operator's GC of a node's claims waits until the node was last seen
// --dead-after ago; a node never seen is gone.
func TestNodeGone(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name    string
		seen    time.Time
		refused bool
	}{
		{"seen a minute ago", now.Add(-time.Minute), true},
		{"seen a moment before the limit", now.Add(-time.Hour + time.Second), true},
		{"seen at the limit", now.Add(-time.Hour), false},
		{"seen a day ago", now.Add(-24 * time.Hour), false},
		{"never seen", time.Time{}, false},
	} {
		err := NodeGone("n1", "host-a", tc.seen, now, time.Hour)
		if (err != nil) != tc.refused {
			t.Errorf("%s: NodeGone = %v, want refused %v", tc.name, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), `node n1 (host "host-a") was seen alive`) {
			t.Errorf("%s: the refusal does not name the node and its host: %v", tc.name, err)
		}
	}
}

// One view, every kind of record: the plan a dry run prints is what GC
// and fsck do to each.
func TestPlanGC(t *testing.T) {
	now := time.Now()
	a := func(s string) netip.Addr { return netip.MustParseAddr("10.0.0." + s) }
	live := Attachment{ContainerID: "live", IfName: "eth0"}
	gone := Attachment{ContainerID: "gone", IfName: "eth0"}
	rec := func(id, ip string, h Hold) HoldRecord {
		h.Key, h.IfName, h.Address = "k"+id, "eth0", "10.0.0."+ip
		return HoldRecord{ID: id, Hold: h, Addr: a(ip), Written: h}
	}
	expired := rec("1", "2", Hold{Expires: now.Add(-time.Minute)})
	held := rec("2", "3", Hold{Expires: now.Add(time.Minute)})
	keyedGone := rec("3", "4", Hold{Owner: "gone"})
	keyedLive := rec("4", "5", Hold{Owner: "live"})
	sharedGone := rec("5", "6", Hold{Owner: "live", Second: "gone"})
	badSecond := rec("6", "7", Hold{Owner: "gone", Second: "gone"})
	stale := rec("7", "8", Hold{Owner: "other"})
	stale.Stale = "its address is owned by gone/eth0"
	unfinished := rec("8", "9", Hold{Owner: "live"})
	unfinished.Written.Owner = "killed"
	v := GCView{
		Owners: map[netip.Addr]Attachment{
			a("2"): HoldOwner("1"), a("3"): HoldOwner("2"), a("4"): gone, a("5"): live, a("6"): live,
			a("7"): gone, a("8"): gone, a("9"): live, a("10"): gone, a("11"): live, a("12"): HoldOwner(StickyID("nobody", "eth0")),
		},
		Holds: []HoldRecord{expired, held, keyedGone, keyedLive, sharedGone, badSecond, stale, unfinished},
	}
	p := PlanGC(v, NewKeepSet("", []Attachment{live}).Keeps, now)
	want := []struct {
		fix               RecordFix
		settle            bool
		endShare, release bool
	}{
		{EndExpired, false, false, false},
		{KeepRecord, false, false, false},
		{KeepRecord, false, false, true},
		{KeepRecord, false, false, false},
		{KeepRecord, false, true, false},
		{DropBadSecond, false, false, true},
		{RemoveRecord, false, false, false},
		{KeepRecord, true, false, false},
	}
	if len(p.Records) != len(want) {
		t.Fatalf("plan has %d records, want %d", len(p.Records), len(want))
	}
	for i, w := range want {
		s := p.Records[i]
		if s.Fix != w.fix || (s.Settle != "") != w.settle || s.EndShare != w.endShare || s.Release != w.release {
			t.Errorf("record %s: %+v, want %+v", s.Record.ID, s, w)
		}
		if s.RecordRepair != RepairOf(v.Holds[i], now) {
			t.Errorf("record %s: GC's repair differs from fsck's", s.Record.ID)
		}
	}
	// The stale record's address and the plain reservation not kept go;
	// held addresses, named or not, are '_' owners GC never frees.
	if got := p.Freed(); !slices.Equal(got, []netip.Addr{a("2"), a("8"), a("10")}) {
		t.Errorf("Freed = %v", got)
	}
	if got := Orphans(v); !slices.Equal(got, []netip.Addr{a("12")}) {
		t.Errorf("Orphans = %v, want the held address no record names", got)
	}
}

func TestPlanClaims(t *testing.T) {
	now := time.Now()
	live := Attachment{ContainerID: "live", IfName: "eth0", Network: "n1"}
	gone := Attachment{ContainerID: "gone", IfName: "eth0", Network: "n1"}
	migrating := Attachment{ContainerID: "src", IfName: "eth0", Network: "n1"}
	other := Attachment{ContainerID: "other", IfName: "eth0", Network: "n2"}
	expired := GCHold{Hold: Hold{Key: "vm", Network: "n1", Expires: now.Add(-time.Second)}, Ref: "h1"}
	v := ClaimsView{Network: "n1",
		Claims: []GCClaim{{Owner: live, Ref: "live"}, {Owner: gone, Ref: "gone"}, {Owner: migrating, Shared: true, Ref: "src"}, {Owner: other, Ref: "other"}},
		Holds:  []GCHold{expired, {Hold: Hold{Key: "vm", Network: "n2", Expires: now.Add(-time.Second)}, Ref: "h2"}, {Hold: Hold{Key: "vm", Network: "n1"}, Ref: "h3"}},
	}
	p := PlanClaims(v, NewKeepSet("", []Attachment{live.Key()}).Keeps, now)
	refs := func(cs []GCClaim) (out []any) {
		for _, c := range cs {
			out = append(out, c.Ref)
		}
		return out
	}
	if got := refs(p.Release); !slices.Equal(got, []any{"gone"}) {
		t.Errorf("released %v, want only the claim not kept of the network collected", got)
	}
	if got := refs(p.EndShare); !slices.Equal(got, []any{"src"}) {
		t.Errorf("shares ended %v, want the shared claim not kept", got)
	}
	if len(p.Expire) != 1 || p.Expire[0].Ref != "h1" {
		t.Errorf("expired %v, want the expired hold of the network collected only", p.Expire)
	}
	if all := PlanClaims(ClaimsView{Claims: v.Claims, Holds: v.Holds}, NewKeepSet("", nil).Keeps, now); len(all.Release) != 3 || len(all.Expire) != 2 {
		t.Errorf("a GC of every network keeping nothing: %d released, %d expired, want 3 and 2", len(all.Release), len(all.Expire))
	}
}
