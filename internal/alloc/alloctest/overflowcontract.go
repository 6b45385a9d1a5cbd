package alloctest

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Scopes are every pool the contract allocates from: p (target's), q
// and r, its overflow chain (chained), and s (second's). A store whose
// DEL, CHECK or GC names its scopes names these.
var Scopes = []alloc.Scope{{Pool: "p"}, {Pool: "q"}, {Pool: "r"}, {Pool: "s"}}

// ScopeOf is the contract's pool of ip: 10.0.0.0/29 is p, 10.2.0.0/29 q,
// 10.3.0.0/29 r, 10.1.0.0/29 s.
func ScopeOf(ip netip.Addr) alloc.Scope {
	switch b := ip.As4(); b[1] {
	case 1:
		return Scopes[3]
	case 2:
		return Scopes[1]
	case 3:
		return Scopes[2]
	}
	return Scopes[0]
}

// chained is target(t, requested) overflowing into q, then r: each a /29
// of five addresses, with a round-robin cursor of its own.
func chained(t *testing.T, requested string) alloc.Target { return withChain(target(t, requested)) }

func withChain(tg alloc.Target) alloc.Target {
	for i, subnet := range []string{"10.2.0.0/29", "10.3.0.0/29"} {
		tg.Overflow = append(tg.Overflow, alloc.Target{Label: "pool " + Scopes[i+1].Pool, Scope: Scopes[i+1], RangeID: i + 2, Set: set(subnet)})
	}
	return tg
}

// CheckTargets are what a contract CHECK without addresses verifies
// (alloc.CheckHeld): pool p, 10.0.0.0/29, overflowing into q, then r.
func CheckTargets() []alloc.Target {
	return []alloc.Target{withChain(alloc.Target{Label: "pool p", Scope: scope, Set: set("10.0.0.0/29")})}
}

// set is subnet's range set; the contract's subnets always parse.
func set(subnet string) addrspace.RangeSet {
	rs, err := addrspace.ParseRangeSet("test", []addrspace.RangeConfig{{Subnet: subnet}})
	if err != nil {
		panic(err)
	}
	return rs
}

// in reports the addresses of got in scope s.
func in(s alloc.Scope, got []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, ip := range got {
		if ScopeOf(ip) == s {
			out = append(out, ip)
		}
	}
	return out
}

// fillChain adds attachments a, b, ... n of them, to the chain.
func fillChain(t *testing.T, s Subject, n int) {
	t.Helper()
	for i := range n {
		mustAdd(t, s, call(string(rune('a'+i))), chained(t, ""))
	}
}

func overflowContract() []Case {
	return []Case{
		{"overflow: a full pool spills into the next, in order, and the first again as soon as it has room", func(t *testing.T, s Subject, _ Caps) {
			var got []netip.Addr
			for i := range 11 {
				got = append(got, mustAdd(t, s, call(string(rune('a'+i))), chained(t, "")))
			}
			if p, q, r := in(Scopes[0], got), in(Scopes[1], got), in(Scopes[2], got); len(p) != 5 || len(q) != 5 || len(r) != 1 ||
				!slices.Equal(got[:5], p) || !slices.Equal(got[5:10], q) {
				t.Fatalf("addresses %v: want p's five, then q's five, then r", got)
			}
			slices.SortFunc(got, netip.Addr.Compare)
			if len(slices.Compact(got)) != 11 {
				t.Fatalf("an address handed out twice")
			}
			mustDel(t, s, call("c"))
			if ip := mustAdd(t, s, call("x"), chained(t, "")); ScopeOf(ip) != Scopes[0] {
				t.Errorf("with room in p again, ADD got %s", ip)
			}
		}},
		{"overflow: every pool full is 100; a requested address stays in its pool (101)", func(t *testing.T, s Subject, _ Caps) {
			fillChain(t, s, 15)
			_, err := add(t, s, call("z"), chained(t, ""))
			AssertCode(t, err, cnierr.CodePoolExhausted)
			_, err = add(t, s, call("z"), chained(t, "10.0.0.2"))
			AssertCode(t, err, cnierr.CodeAddrUnavailable)
		}},
		{"overflow: a retried ADD of an attachment in an overflow pool is 102, never a second address", func(t *testing.T, s Subject, _ Caps) {
			fillChain(t, s, 5)
			ip := mustAdd(t, s, call("q"), chained(t, ""))
			if ScopeOf(ip) != Scopes[1] {
				t.Fatalf("got %s, want q's", ip)
			}
			mustDel(t, s, call("a")) // p has room again
			_, err := add(t, s, call("q"), chained(t, ""))
			AssertCode(t, err, cnierr.CodeDuplicateAttach)
			if err := s.Check(call("q"), []netip.Addr{ip}); err != nil {
				t.Errorf("CHECK of the overflow address: %v", err)
			}
			if err := s.Check(call("q"), nil); err != nil {
				t.Errorf("CHECK without addresses: %v", err)
			}
			mustDel(t, s, call("q")) // without prevResult
			AssertCode(t, s.Check(call("q"), nil), cnierr.CodeUnknownContainer)
			if again := mustAdd(t, s, call("y"), chained(t, "")); ScopeOf(again) != Scopes[0] {
				t.Errorf("after DEL, ADD got %s, want p's freed address", again)
			}
		}},
		{"overflow: GC covers the chain", func(t *testing.T, s Subject, _ Caps) {
			fillChain(t, s, 6)
			mustGC(t, s, epoch, att("a"))
			for i := 1; i < 6; i++ {
				AssertCode(t, s.Check(call(string(rune('a'+i))), nil), cnierr.CodeUnknownContainer)
			}
			if err := s.Check(call("a"), nil); err != nil {
				t.Errorf("the live attachment lost its address: %v", err)
			}
		}},
		{"overflow: a sticky key held in an overflow pool gets that address back, even with room in the first", func(t *testing.T, s Subject, _ Caps) {
			fillChain(t, s, 5)
			ip := mustAdd(t, s, sticky("k1", 0), chained(t, ""))
			if ScopeOf(ip) != Scopes[1] {
				t.Fatalf("got %s, want q's", ip)
			}
			mustDel(t, s, sticky("k1", 0))
			mustDel(t, s, call("a"))
			if got := mustAdd(t, s, sticky("k2", time.Second), chained(t, "")); got != ip {
				t.Errorf("K got %s back, want its held %s", got, ip)
			}
		}},
	}
}
