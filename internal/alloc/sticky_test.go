package alloc

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func TestParseSticky(t *testing.T) {
	for _, tc := range []struct {
		name    string
		k       *StickyKeys
		want    Sticky
		wantErr string
	}{
		{"absent", nil, Sticky{HoldFor: DefaultHoldFor}, ""},
		{"pod, default hold", &StickyKeys{By: []string{"pod"}}, Sticky{By: []string{"pod"}, HoldFor: DefaultHoldFor}, ""},
		{"forever", &StickyKeys{By: []string{"arg", "pod"}, HoldFor: "0"}, Sticky{By: []string{"arg", "pod"}}, ""},
		{"an hour", &StickyKeys{By: []string{"annotation"}, HoldFor: "1h"}, Sticky{By: []string{"annotation"}, HoldFor: time.Hour}, ""},
		{"no by: the selector's keys only", &StickyKeys{HoldFor: "1h"}, Sticky{HoldFor: time.Hour}, ""},
		{"unknown source", &StickyKeys{By: []string{"pod", "label"}}, Sticky{}, "ipam.sticky.by[1]"},
		{"kubevirt", &StickyKeys{By: []string{"kubevirt"}, HoldFor: "0"}, Sticky{By: []string{"kubevirt"}}, ""},
		{"bad duration", &StickyKeys{By: []string{"pod"}, HoldFor: "soon"}, Sticky{}, "ipam.sticky.holdFor"},
		{"negative", &StickyKeys{By: []string{"pod"}, HoldFor: "-1m"}, Sticky{}, "ipam.sticky.holdFor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSticky(tc.k)
			if tc.wantErr != "" {
				if e := cnierr.As(err); e == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Msg+e.Details, tc.wantErr) {
					t.Fatalf("err = %v, want 7 naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.HoldFor != tc.want.HoldFor || strings.Join(got.By, ",") != strings.Join(tc.want.By, ",") {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestStickyAddr(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := netip.MustParseAddr("10.0.0.7")
	held := &Hold{Key: "db/pg-0", IfName: "eth0", Address: a.String(), LastOwner: "old", Expires: now.Add(time.Minute)}
	reserved := &Hold{Key: "db/pg-0", IfName: "eth0", Address: a.String(), Owner: "live"}
	for _, tc := range []struct {
		name      string
		h         *Hold
		cid       string
		requested netip.Addr
		want      netip.Addr
		wantCode  uint
	}{
		{"no hold", nil, "new", netip.Addr{}, netip.Addr{}, 0},
		{"held: given again to a new container", held, "new", netip.Addr{}, a, 0},
		{"held, asked for by address", held, "new", a, a, 0},
		{"held, another address asked for", held, "new", netip.MustParseAddr("10.0.0.8"), netip.Addr{}, cnierr.CodeAddrUnavailable},
		{"expired: allocate as usual", &Hold{Key: "k", Address: a.String(), Expires: now}, "new", netip.Addr{}, netip.Addr{}, 0},
		{"held until released", &Hold{Key: "k", Address: a.String()}, "new", netip.Addr{}, a, 0},
		{"reserved by a live container", reserved, "new", netip.Addr{}, netip.Addr{}, cnierr.CodeStickyHeld},
		{"reserved by this container (a retried ADD)", reserved, "live", netip.Addr{}, a, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StickyAddr(tc.h, "", tc.cid, tc.requested, now)
			if cnierr.Code(err) != tc.wantCode || got != tc.want {
				t.Fatalf("got %s %v, want %s code %d", got, err, tc.want, tc.wantCode)
			}
			if tc.wantCode == cnierr.CodeStickyHeld && !strings.Contains(cnierr.As(err).Msg, "sticky key db/pg-0 is held by live attachment live") {
				t.Errorf("105 says %q", cnierr.As(err).Msg)
			}
		})
	}
	for _, tc := range []struct {
		holdFor string
		want    time.Time // zero: until released
	}{
		{"1h0m0s", now.Add(time.Hour)},
		{"0s", time.Time{}},
		{"", now.Add(DefaultHoldFor)},     // a record from before holdFor was kept
		{"soon", now.Add(DefaultHoldFor)}, // a record is never refused
		{"-1h", now.Add(DefaultHoldFor)},
	} {
		live := *reserved
		live.HoldFor = tc.holdFor
		r := live.HeldFrom(now)
		if !r.Held() || r.LastOwner != "live" || !r.Expires.Equal(tc.want) || r.Expired(now) {
			t.Errorf("release with holdFor %q: %+v, want expiry %v", tc.holdFor, r, tc.want)
		}
		if r.Expired(now.Add(1000*time.Hour)) == tc.want.IsZero() {
			t.Errorf("release with holdFor %q: expired at +1000h = %v", tc.holdFor, !tc.want.IsZero())
		}
	}
	if !reserved.For("db/pg-0", "eth0") || reserved.For("db/pg-0", "net1") || reserved.For("db/pg-1", "eth0") {
		t.Error("Hold.For must compare key and interface")
	}
	if StickyID("k", "eth0") == StickyID("k", "net1") || StickyID("ab", "c") == StickyID("a", "bc") || len(StickyID("a/../b", "eth0")) != 32 {
		t.Error("StickyID must differ per interface and be a fixed-length name")
	}
}

// A hold lasts at least its holdFor, whatever the sub-second part of the
// moment it was made: the expiry is rounded up to the second, never down.
func TestHoldExpiryLastsAtLeastHoldFor(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		offset  time.Duration // below the second
		holdFor time.Duration
		want    time.Time
	}{
		{"on the second", 0, time.Second, base.Add(time.Second)},
		{"just after the second", time.Nanosecond, time.Second, base.Add(2 * time.Second)},
		{"half a second in", 500 * time.Millisecond, time.Second, base.Add(2 * time.Second)},
		{"just before the next", 999 * time.Millisecond, 3 * time.Second, base.Add(4 * time.Second)},
		{"a sub-second holdFor", 200 * time.Millisecond, 300 * time.Millisecond, base.Add(time.Second)},
		{"until released", 500 * time.Millisecond, 0, time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := base.Add(tc.offset)
			got := HoldExpiry(now, tc.holdFor)
			if !got.Equal(tc.want) {
				t.Fatalf("HoldExpiry(%s, %s) = %s, want %s", now.Format(time.RFC3339Nano), tc.holdFor, got, tc.want)
			}
			if tc.holdFor == 0 {
				return
			}
			h := Hold{Key: "k", Owner: "c1", HoldFor: tc.holdFor.String()}.HeldFrom(now)
			if h.Expired(now.Add(tc.holdFor - time.Nanosecond)) {
				t.Errorf("hold made at %s for %s expired %s later (expires %s)", now.Format(time.RFC3339Nano), tc.holdFor, tc.holdFor-time.Nanosecond, h.Expires.Format(time.RFC3339Nano))
			}
			if !h.Expired(tc.want) {
				t.Errorf("hold not expired at its expiry %s", tc.want)
			}
		})
	}
}

// fsck's check of a migration target: none, a valid one, or why not.
func TestSecondProblem(t *testing.T) {
	base := Hold{Owner: "src", IfName: "eth0", Key: "vms/vm/pg", Address: "10.0.0.2"}
	for _, tc := range []struct {
		second string
		node   string
		want   string
	}{
		{"", "", ""},
		{"tgt", "", ""},
		{"src", "", "its owner"},
		{"src", "node-b", ""},
		{"bad id!", "", "migration target that"},
	} {
		h := base
		h.Second, h.SecondNode = tc.second, tc.node
		if got := h.SecondProblem(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("second %q on %q: %q, want %q", tc.second, tc.node, got, tc.want)
		}
	}
	held := base
	held.Owner, held.Second = "", "src"
	if p := held.SecondProblem(); p != "" {
		t.Errorf("a held record's second: %q", p)
	}
}
