package alloctest

import (
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// quota is the contract's tenant quota.
func quota(max int) *pool.Quota {
	return &pool.Quota{Tenant: "namespace=a", Rule: "ipam.rules[0]", Max: max}
}

// tenant is attachment n's call for the contract's tenant, with quota max.
func tenant(n string, max int) Call {
	c := call(n)
	c.Quota = quota(max)
	return c
}

func quotaContract() []Case {
	return []Case{
		{"quota: the tenant's max-th address, then 106 reserving nothing; a freed one makes room", func(t *testing.T, s Subject, _ Caps) {
			for i := range 3 {
				mustAdd(t, s, tenant(string(rune('a'+i)), 3), target(t, ""))
			}
			_, err := add(t, s, tenant("d", 3), target(t, ""))
			AssertCode(t, err, cnierr.CodeQuotaExceeded)
			AssertCode(t, s.Check(call("d"), nil), cnierr.CodeUnknownContainer)
			mustAdd(t, s, call("other"), target(t, "")) // no quota: another tenant's, or none
			mustDel(t, s, call("a"))
			mustAdd(t, s, tenant("d", 3), target(t, ""))
			// Lowering the quota frees nothing.
			_, err = add(t, s, tenant("e", 1), target(t, ""))
			AssertCode(t, err, cnierr.CodeQuotaExceeded)
			for _, n := range []string{"b", "c", "d"} {
				if err := s.Check(call(n), nil); err != nil {
					t.Errorf("%s lost its address to a lowered quota: %v", n, err)
				}
			}
		}},
		{"quota: counts the overflow chain", func(t *testing.T, s Subject, _ Caps) {
			fillChain(t, s, 5) // p is full, untenanted
			for i := range 2 {
				if ip := mustAdd(t, s, tenant(string(rune('v'+i)), 2), chained(t, "")); ScopeOf(ip) != Scopes[1] {
					t.Fatalf("got %s, want q's", ip)
				}
			}
			_, err := add(t, s, tenant("x", 2), chained(t, ""))
			AssertCode(t, err, cnierr.CodeQuotaExceeded)
		}},
		{"quota: a sticky hold counts, and its key gets it back at the quota", func(t *testing.T, s Subject, _ Caps) {
			k := sticky("a", 0)
			k.Quota = quota(2)
			ip := mustAdd(t, s, k, target(t, ""))
			mustAdd(t, s, tenant("b", 2), target(t, ""))
			mustDel(t, s, k, ip) // held for K
			_, err := add(t, s, tenant("c", 2), target(t, ""))
			AssertCode(t, err, cnierr.CodeQuotaExceeded)
			back := sticky("k2", time.Second)
			back.Quota = quota(2)
			if got := mustAdd(t, s, back, target(t, "")); got != ip {
				t.Errorf("K got %s at the quota, want its held %s", got, ip)
			}
			if err := s.ReleaseAddr(ip, epoch.Add(2*time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := s.ReleaseKey(keyK, "", epoch.Add(2*time.Second)); err != nil {
				t.Fatal(err)
			}
			mustAdd(t, s, tenant("c", 2), target(t, ""))
		}},
		{"quota: a retried ADD at the quota is 102, as below it, and the attachment keeps its address", func(t *testing.T, s Subject, _ Caps) {
			a := mustAdd(t, s, tenant("a", 3), target(t, ""))
			mustAdd(t, s, tenant("b", 3), target(t, ""))
			_, err := add(t, s, tenant("a", 2), target(t, ""))
			AssertCode(t, err, cnierr.CodeDuplicateAttach)
			for i := range 3 { // p's five addresses taken: w spills into q
				mustAdd(t, s, call(string(rune('c'+i))), chained(t, ""))
			}
			w := mustAdd(t, s, tenant("w", 3), chained(t, ""))
			if ScopeOf(w) != Scopes[1] {
				t.Fatalf("w got %s, want q's", w)
			}
			_, err = add(t, s, tenant("w", 3), chained(t, ""))
			AssertCode(t, err, cnierr.CodeDuplicateAttach)
			owns(t, s, "a", a)
			owns(t, s, "w", w)
		}},
		{"quota: a migration target whose key holds nothing is 107 at the quota, as below it", func(t *testing.T, s Subject, _ Caps) {
			mustAdd(t, s, tenant("a", 1), target(t, ""))
			m := migrant("b", "m1")
			m.Quota = quota(1)
			_, err := add(t, s, m, target(t, ""))
			AssertCode(t, err, cnierr.CodeNoMigrationSource)
			_, err = add(t, s, m, chained(t, ""))
			AssertCode(t, err, cnierr.CodeNoMigrationSource)
			AssertCode(t, s.Check(call("b"), nil), cnierr.CodeUnknownContainer)
		}},
	}
}
