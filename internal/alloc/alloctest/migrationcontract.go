package alloctest

import (
	"net/netip"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// migrant is attachment n's ADD with key K started for migration mig.
func migrant(n, mig string) Call {
	c := sticky(n, 0)
	c.Migration = mig
	return c
}

// owns asserts that c's attachment has ip (CHECK).
func owns(t *testing.T, s Subject, n string, ip netip.Addr) {
	t.Helper()
	if err := s.Check(call(n), []netip.Addr{ip}); err != nil {
		t.Errorf("cid-%s does not have %s: %v", n, ip, err)
	}
}

// migrated is K's address with source a live and target b (migration m1)
// sharing it; a store without Caps.Migration refuses b (105) and the row
// ends (false).
func migrated(t *testing.T, s Subject, caps Caps) (netip.Addr, bool) {
	t.Helper()
	ip := mustAdd(t, s, sticky("a", 0), target(t, ""))
	got, err := add(t, s, migrant("b", "m1"), target(t, ""))
	if !caps.Migration {
		AssertCode(t, err, cnierr.CodeStickyHeld)
		owns(t, s, "a", ip)
		AssertCode(t, s.Check(call("b"), nil), cnierr.CodeUnknownContainer)
		return ip, false
	}
	if err != nil || got != ip {
		t.Fatalf("the migration target got %s %v, want the source's %s", got, err, ip)
	}
	return ip, true
}

// whenMigrated is a row over migrated's address, run only by a store
// with Caps.Migration.
func whenMigrated(row func(t *testing.T, s Subject, ip netip.Addr)) func(*testing.T, Subject, Caps) {
	return func(t *testing.T, s Subject, caps Caps) {
		if ip, ok := migrated(t, s, caps); ok {
			row(t, s, ip)
		}
	}
}

// migrationContract is docs/sticky.md's KubeVirt live migration: two
// owners during a migration, never more.
func migrationContract() []Case {
	return []Case{
		{"migration: a target shares the live source's address; a third, another target, a keyless pod are refused", whenMigrated(func(t *testing.T, s Subject, ip netip.Addr) {
			owns(t, s, "a", ip)
			owns(t, s, "b", ip)
			if err := s.Check(call("b"), nil); err != nil {
				t.Errorf("CHECK without addresses of the target: %v", err)
			}
			_, err := add(t, s, migrant("c", "m2"), target(t, ""))
			AssertCode(t, err, cnierr.CodeStickyHeld)
			_, err = add(t, s, sticky("d", 0), target(t, ""))
			AssertCode(t, err, cnierr.CodeStickyHeld)
			notFree(t, s, ip)
			for _, got := range fill(t, s, target(t, "")) {
				if got == ip {
					t.Fatalf("%s handed out to a third attachment", ip)
				}
			}
		})},
		{"migration: the target again is 102", func(t *testing.T, s Subject, caps Caps) {
			if _, ok := migrated(t, s, caps); !ok {
				return
			}
			_, err := add(t, s, migrant("b", "m1"), target(t, ""))
			AssertCode(t, err, cnierr.CodeDuplicateAttach)
		}},
		{"migration: a target whose key holds no address is 107 and allocates nothing", func(t *testing.T, s Subject, _ Caps) {
			_, err := add(t, s, migrant("b", "m1"), target(t, ""))
			AssertCode(t, err, cnierr.CodeNoMigrationSource)
			if got := fill(t, s, target(t, "")); len(got) != 5 {
				t.Errorf("the refused target left %d of 5 addresses free", len(got))
			}
			if err := s.ReleaseKey(keyK, "", epoch); err == nil {
				t.Error("the refused target left K a hold")
			}
		}},
		{"migration: failed: the target's DEL leaves the source the owner, and a new target shares again", whenMigrated(func(t *testing.T, s Subject, ip netip.Addr) {
			mustDel(t, s, migrant("b", "m1"), ip)
			owns(t, s, "a", ip)
			AssertCode(t, s.Check(call("b"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			notFree(t, s, ip)
			if got := mustAdd(t, s, migrant("c", "m2"), target(t, "")); got != ip {
				t.Errorf("the next target got %s, want %s", got, ip)
			}
		})},
		{"migration: DELs without the key act on their own attachments all the same", whenMigrated(func(t *testing.T, s Subject, ip netip.Addr) {
			mustDel(t, s, call("b"))
			owns(t, s, "a", ip)
			AssertCode(t, s.Check(call("b"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			if got := mustAdd(t, s, migrant("c", "m2"), target(t, "")); got != ip {
				t.Fatalf("the next target got %s, want %s", got, ip)
			}
			mustDel(t, s, call("a"))
			owns(t, s, "c", ip)
			mustDel(t, s, call("c"))
			notFree(t, s, ip)
		})},
		{"migration: succeeded: the source's DEL leaves the target the owner; a second migration's source carries the first name", whenMigrated(func(t *testing.T, s Subject, ip netip.Addr) {
			mustDel(t, s, sticky("a", time.Second), ip)
			owns(t, s, "b", ip)
			AssertCode(t, s.Check(call("a"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			notFree(t, s, ip)
			_, err := add(t, s, migrant("c", "m1"), target(t, ""))
			AssertCode(t, err, cnierr.CodeStickyHeld)
			if got := mustAdd(t, s, migrant("c", "m2"), target(t, "")); got != ip {
				t.Fatalf("the second migration's target got %s, want %s", got, ip)
			}
			mustDel(t, s, migrant("b", "m1"), ip)
			owns(t, s, "c", ip)
		})},
		{"migration: a refused ADD's rollback DEL releases nothing", whenMigrated(func(t *testing.T, s Subject, ip netip.Addr) {
			_, err := add(t, s, migrant("c", "m2"), target(t, ""))
			AssertCode(t, err, cnierr.CodeStickyHeld)
			mustDel(t, s, migrant("c", "m2"), ip)
			owns(t, s, "a", ip)
			owns(t, s, "b", ip)
			mustDel(t, s, sticky("a", 0), ip)
			owns(t, s, "b", ip)
		})},
		{"migration: both deleted, in either order: the address is held for the key", func(t *testing.T, s Subject, caps Caps) {
			for _, first := range []string{"a", "b"} {
				s := s
				if first == "b" {
					if err := s.ReleaseKey(keyK, "", epoch); err != nil {
						t.Fatal(err)
					}
				}
				ip, ok := migrated(t, s, caps)
				if !ok {
					return
				}
				other := map[string]string{"a": "b", "b": "a"}[first]
				mustDel(t, s, migrant(first, "m1"), ip)
				mustDel(t, s, migrant(other, "m1"), ip)
				notFree(t, s, ip)
				if got := mustAdd(t, s, sticky("e", time.Second), target(t, "")); got != ip {
					t.Fatalf("K got %s after both DELs (%s first), want %s", got, first, ip)
				}
				mustDel(t, s, sticky("e", 0), ip)
			}
		}},
		{"migration: GC keeps both owners while both live, and a gone one's share ends", whenMigrated(func(t *testing.T, s Subject, ip netip.Addr) {
			mustGC(t, s, epoch, att("a"), att("b"))
			owns(t, s, "a", ip)
			owns(t, s, "b", ip)
			mustGC(t, s, epoch, att("b"))
			owns(t, s, "b", ip)
			AssertCode(t, s.Check(call("a"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			if got := mustAdd(t, s, migrant("c", "m2"), target(t, "")); got != ip {
				t.Fatalf("a target after GC got %s, want %s", got, ip)
			}
			mustGC(t, s, epoch, att("b"))
			owns(t, s, "b", ip)
			AssertCode(t, s.Check(call("c"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			mustGC(t, s, epoch)
			notFree(t, s, ip)
		})},
		{"migration: one GC that finds both owners gone holds the address for the key", whenMigrated(func(t *testing.T, s Subject, ip netip.Addr) {
			mustGC(t, s, epoch)
			AssertCode(t, s.Check(call("a"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			AssertCode(t, s.Check(call("b"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			notFree(t, s, ip)
			if got := mustAdd(t, s, sticky("e", time.Second), target(t, "")); got != ip {
				t.Fatalf("K got %s after a GC of both owners, want %s", got, ip)
			}
		})},
		{"migration: a failed target ADD gives its share back", func(t *testing.T, s Subject, caps Caps) {
			ps, err := s.Add(sticky("a", 0), []alloc.Target{target(t, ""), second()})
			if err != nil {
				t.Fatal(err)
			}
			ip := ps[0].Addr()
			tg := second()
			tg.Requested = addr("10.1.0.6")
			if tg.Requested == ps[1].Addr() {
				tg.Requested = addr("10.1.0.5")
			}
			_, err = add(t, s, migrant("b", "m1"), target(t, ""), tg)
			if !caps.Migration {
				AssertCode(t, err, cnierr.CodeStickyHeld)
				return
			}
			AssertCode(t, err, cnierr.CodeAddrUnavailable)
			AssertCode(t, s.Check(call("b"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			if got := mustAdd(t, s, migrant("c", "m2"), target(t, ""), second()); got != ip {
				t.Errorf("a target after the failed one got %s, want %s", got, ip)
			}
		}},
		{"migration: an operator's release of the shared address leaves it the target's", whenMigrated(func(t *testing.T, s Subject, ip netip.Addr) {
			if err := s.ReleaseAddr(ip, epoch); err != nil {
				t.Fatal(err)
			}
			owns(t, s, "b", ip)
			if err := s.ReleaseKey(keyK, "", epoch); err == nil {
				t.Error("released the key of a live target")
			}
		})},
	}
}
