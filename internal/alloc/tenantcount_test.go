package alloc_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// A tenant is counted in every pool of each target's chain and in the
// quota's own pools, each once; without a quota nowhere.
func TestCountScopes(t *testing.T) {
	p := func(name string) alloc.Target { return alloc.Target{Scope: alloc.Scope{Pool: name}} }
	a, b := p("a"), p("b")
	a.Overflow = []alloc.Target{p("shared")}
	b.Overflow = []alloc.Target{p("shared")}
	q := &pool.Quota{Tenant: "namespace=x", Max: 2, Pools: []string{"a", "gold", "shared"}}
	got := alloc.CountScopes(q, []alloc.Target{a, b})
	want := []alloc.Scope{{Pool: "a"}, {Pool: "shared"}, {Pool: "b"}, {Pool: "gold"}}
	if !slices.Equal(got, want) {
		t.Fatalf("CountScopes = %v, want %v", got, want)
	}
	if got := alloc.CountScopes(nil, []alloc.Target{a}); got != nil {
		t.Fatalf("without a quota: %v", got)
	}
	net := alloc.Target{Scope: alloc.Scope{Network: "n"}}
	if got := alloc.CountScopes(&pool.Quota{Max: 1}, []alloc.Target{net}); !slices.Equal(got, []alloc.Scope{{Network: "n"}}) {
		t.Fatalf("a standalone range set: %v", got)
	}
}

// A record counts while its address is reserved by the reservation it was
// written with (a hold keeps it); anything else counts nothing.
func TestTenantRecordStale(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.1")
	for _, tt := range []struct {
		name string
		r    alloc.TenantRecord
		want string
	}{
		{"reserved (a reservation or a hold)", alloc.TenantRecord{Tenant: "namespace=a", Addr: ip, Reserved: true}, ""},
		{"its address released", alloc.TenantRecord{Tenant: "namespace=a", Addr: ip}, "its address is not reserved"},
		{"no tenant", alloc.TenantRecord{Addr: ip, Reserved: true}, "is no tenant's record"},
		{"no address", alloc.TenantRecord{Tenant: "namespace=a"}, "names no address"},
		{"another layout's", alloc.TenantRecord{Tenant: "namespace=a", Addr: ip, Reserved: true, Foreign: "old layout"}, "old layout"},
	} {
		if got := tt.r.Stale(); got != tt.want {
			t.Errorf("%s: Stale() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// 106 at max and past it, nothing below; max 0 refuses every count.
func TestQuotaReached(t *testing.T) {
	q := &pool.Quota{Tenant: "namespace=a", Rule: "ipam.rules[0]", Max: 2}
	if err := alloc.QuotaReached(q, 1); err != nil {
		t.Fatalf("below max: %v", err)
	}
	for _, n := range []int{2, 3} {
		if err := alloc.QuotaReached(q, n); cnierr.Code(err) != cnierr.CodeQuotaExceeded {
			t.Fatalf("at %d: %v, want 106", n, err)
		}
	}
	if err := alloc.QuotaReached(&pool.Quota{Max: 0}, 0); err == nil {
		t.Fatal("max 0 admits")
	}
}

// A count takes the records that count in its scopes; those that count
// nothing are listed for removal wherever they are, and a counting record
// in another scope (another quota's) is neither.
func TestCountTenant(t *testing.T) {
	a, b, other := alloc.Scope{Pool: "a"}, alloc.Scope{Pool: "b"}, alloc.Scope{Pool: "other"}
	rec := func(s alloc.Scope, ip string, reserved bool) alloc.TenantRecord {
		return alloc.TenantRecord{Tenant: "namespace=x", Addr: netip.MustParseAddr(ip), Scope: s, Reserved: reserved}
	}
	recs := []alloc.TenantRecord{
		rec(a, "10.0.0.1", true), rec(b, "10.0.1.1", true), rec(other, "10.0.2.1", true),
		rec(a, "10.0.0.2", false), rec(other, "10.0.2.2", false),
	}
	n, stale := alloc.CountTenant(recs, []alloc.Scope{a, b})
	if n != 2 || !slices.Equal(stale, []int{3, 4}) {
		t.Fatalf("CountTenant = %d, %v; want 2, [3 4]", n, stale)
	}
}

// The rules that bind one tenant give it one quota: counted across all
// their pools, limited by the smallest max; the matched rule's own on a
// tie.
func TestTenantQuota(t *testing.T) {
	own := pool.Quota{Tenant: "namespace=a", Rule: "ipam.rules[1]", Max: 2}
	q := alloc.TenantQuota(own, []pool.Quota{
		{Rule: "ipam.rules[0]", Max: 2, Pools: []string{"gold", "shared"}},
		{Rule: "ipam.rules[1]", Max: 2, Pools: []string{"std", "shared"}},
	})
	if q.Tenant != "namespace=a" || q.Rule != "ipam.rules[1]" || q.Max != 2 || !slices.Equal(q.Pools, []string{"gold", "shared", "std"}) {
		t.Fatalf("tie: %+v", q)
	}
	q = alloc.TenantQuota(own, []pool.Quota{{Rule: "ipam.rules[0]", Max: 1, Pools: []string{"gold"}}})
	if q.Rule != "ipam.rules[0]" || q.Max != 1 {
		t.Fatalf("a smaller max elsewhere: %+v", q)
	}
}

// A count taken partly without locks lets an ADD through below the
// quota and never refuses one at it: only an exact count gets to 106.
func TestPartialCount(t *testing.T) {
	q := &pool.Quota{Tenant: "namespace=x", Max: 2}
	for _, tt := range []struct {
		n     int
		exact bool
		want  error
	}{
		{1, false, nil},
		{2, false, alloc.ErrWholeCount},
		{3, false, alloc.ErrWholeCount},
		{2, true, nil}, // QuotaGate's own verdict on it is 106
	} {
		n, err := alloc.PartialCount(q, tt.n, tt.exact)
		if n != tt.n || !errors.Is(err, tt.want) {
			t.Errorf("PartialCount(%d, exact %v) = %d, %v; want %d, %v", tt.n, tt.exact, n, err, tt.n, tt.want)
		}
	}
}
