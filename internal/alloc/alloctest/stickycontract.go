package alloctest

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// keyK is the contract's sticky key.
const keyK = "ns/db-0"

// sticky is attachment n's call with key K held for a minute, at epoch +
// after.
func sticky(n string, after time.Duration) Call {
	c := call(n)
	c.Key, c.HoldFor, c.Now = keyK, time.Minute, epoch.Add(after)
	return c
}

// heldByK is K's address after a's ADD and DEL: held for K.
func heldByK(t *testing.T, s Subject, tg alloc.Target) netip.Addr {
	t.Helper()
	ip := mustAdd(t, s, sticky("a", 0), tg)
	mustDel(t, s, sticky("a", 0), ip)
	return ip
}

// notFree asserts that ip is nobody else's: a request for it is 101.
func notFree(t *testing.T, s Subject, ip netip.Addr) {
	t.Helper()
	_, err := add(t, s, call("other"), target(t, ip.String()))
	AssertCode(t, err, cnierr.CodeAddrUnavailable)
}

// free asserts that ip can be handed out to another attachment.
func free(t *testing.T, s Subject, ip netip.Addr) {
	t.Helper()
	if got, err := add(t, s, call("other"), target(t, ip.String())); err != nil || got != ip {
		t.Errorf("%s is not free: %v %v", ip, got, err)
	}
}

// rangeFrom is Small's subnet with its range starting at start.
func rangeFrom(start string) addrspace.RangeConfig {
	return addrspace.RangeConfig{Subnet: "10.0.0.0/29", RangeStart: start}
}

// stickyContract is docs/sticky.md's behaviour, a row a case.
func stickyContract() []Case {
	return []Case{
		{"sticky: a new key allocates, and gets its address back after DEL, whatever its container ID", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, ""))
			if got := mustAdd(t, s, sticky("b", time.Second), target(t, "")); got != ip {
				t.Errorf("K got %s back, want %s", got, ip)
			}
		}},
		{"sticky: a malformed key is 7 on ADD and no failure on DEL, which keeps the hold", func(t *testing.T, s Subject, _ Caps) {
			bad := sticky("b", 0)
			bad.Key = strings.Repeat("k", 300) // longer than a key may be
			_, err := add(t, s, bad, target(t, ""))
			AssertCode(t, err, cnierr.CodeInvalidConfig)
			ip := mustAdd(t, s, sticky("a", 0), target(t, ""))
			bad.Att = att("a")
			mustDel(t, s, bad, ip)
			mustDel(t, s, bad) // a DEL's retry, without prevResult
			notFree(t, s, ip)
			if got := mustAdd(t, s, sticky("c", time.Second), target(t, "")); got != ip {
				t.Errorf("K got %s back, want %s", got, ip)
			}
		}},
		{"sticky: a held address is nobody else's, round robin included", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, ""))
			notFree(t, s, ip)
			for _, got := range fill(t, s, target(t, "")) {
				if got == ip {
					t.Fatalf("the held %s handed out", ip)
				}
			}
		}},
		{"sticky: a gone container's reservation becomes a hold at GC", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, sticky("a", 0), target(t, ""))
			mustGC(t, s, epoch)
			notFree(t, s, ip)
			if got := mustAdd(t, s, sticky("b", time.Second), target(t, "")); got != ip {
				t.Errorf("K got %s, want %s", got, ip)
			}
		}},
		{"sticky: a live owner is 105 and nothing is reserved", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, sticky("a", 0), target(t, ""))
			_, err := add(t, s, sticky("b", 0), target(t, ""))
			AssertCode(t, err, cnierr.CodeStickyHeld)
			AssertCode(t, s.Check(call("b"), nil), cnierr.CodeUnknownContainer)
			if err := s.Check(call("a"), []netip.Addr{ip}); err != nil {
				t.Errorf("the live owner lost it: %v", err)
			}
		}},
		{"sticky: the same container again is 102", func(t *testing.T, s Subject, _ Caps) {
			mustAdd(t, s, sticky("a", 0), target(t, ""))
			_, err := add(t, s, sticky("a", 0), target(t, ""))
			AssertCode(t, err, cnierr.CodeDuplicateAttach)
		}},
		{"sticky: a request for another address than K's is 101, for K's its address", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, ""))
			other := addr("10.0.0.6")
			if other == ip {
				other = addr("10.0.0.5")
			}
			_, err := add(t, s, sticky("b", 0), target(t, other.String()))
			AssertCode(t, err, cnierr.CodeAddrUnavailable)
			if got := mustAdd(t, s, sticky("b", 0), target(t, ip.String())); got != ip {
				t.Errorf("K asking for its own got %s", got)
			}
		}},
		{"sticky: a key holds per interface", func(t *testing.T, s Subject, _ Caps) {
			eth0 := mustAdd(t, s, sticky("a", 0), target(t, ""))
			c := sticky("a", 0)
			c.Att.IfName = "net1"
			net1 := mustAdd(t, s, c, target(t, ""))
			if net1 == eth0 {
				t.Fatalf("one address for two interfaces: %s", eth0)
			}
			mustDel(t, s, c, net1)
			mustDel(t, s, sticky("a", 0), eth0)
			c.Att.ContainerID = "cid-b"
			if got := mustAdd(t, s, c, target(t, "")); got != net1 {
				t.Errorf("net1 got %s, want %s", got, net1)
			}
		}},
		{"sticky: a DEL without the key holds all the same", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, sticky("a", 0), target(t, ""))
			mustDel(t, s, call("a"))
			notFree(t, s, ip)
			if got := mustAdd(t, s, sticky("b", 0), target(t, "")); got != ip {
				t.Errorf("K got %s, want %s", got, ip)
			}
		}},
		{"sticky: GC keeps an unexpired hold, whatever the valid attachments", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, ""))
			mustGC(t, s, epoch.Add(30*time.Second))
			if got := mustAdd(t, s, sticky("b", 40*time.Second), target(t, "")); got != ip {
				t.Errorf("K got %s, want %s", got, ip)
			}
		}},
		{"sticky: GC frees an expired hold", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, ""))
			mustGC(t, s, epoch.Add(61*time.Second))
			free(t, s, ip)
		}},
		{"sticky: an expired hold gives nothing: K allocates afresh, and its address is freed", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, ""))
			other := addr("10.0.0.6")
			if other == ip {
				other = addr("10.0.0.5")
			}
			if got := mustAdd(t, s, sticky("b", 61*time.Second), target(t, other.String())); got != other {
				t.Errorf("K asking for %s got %s", other, got)
			}
			free(t, s, ip)
		}},
		{"sticky: a hold lasts its ADD's holdFor, whatever the DEL's configuration says", func(t *testing.T, s Subject, _ Caps) {
			c := sticky("a", 0)
			c.HoldFor = time.Hour
			ip := mustAdd(t, s, c, target(t, ""))
			c.HoldFor, c.Now = 5*time.Minute, epoch.Add(time.Second)
			mustDel(t, s, c, ip) // with prevResult
			mustGC(t, s, epoch.Add(6*time.Minute))
			notFree(t, s, ip)
			mustGC(t, s, epoch.Add(61*time.Minute))
			free(t, s, ip)
		}},
		{"sticky: holdFor 0 holds until an operator releases the key", func(t *testing.T, s Subject, _ Caps) {
			c := sticky("a", 0)
			c.HoldFor = 0
			ip := mustAdd(t, s, c, target(t, ""))
			mustDel(t, s, c, ip)
			mustGC(t, s, epoch.Add(10000*time.Hour))
			notFree(t, s, ip)
			if err := s.ReleaseKey(keyK, "", epoch); err != nil {
				t.Fatal(err)
			}
			free(t, s, ip)
			if err := s.ReleaseKey(keyK, "", epoch); err == nil {
				t.Error("releasing a key that holds nothing succeeded")
			}
		}},
		{"sticky: releasing a key whose address a container has is refused", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, sticky("a", 0), target(t, ""))
			if err := s.ReleaseKey(keyK, "eth0", epoch); err == nil {
				t.Error("released")
			}
			if err := s.Check(call("a"), []netip.Addr{ip}); err != nil {
				t.Errorf("the owner lost it: %v", err)
			}
		}},
		{"sticky: an operator's release of a key's reservation makes it a hold", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, sticky("a", 0), target(t, ""))
			if err := s.ReleaseAddr(ip, epoch); err != nil {
				t.Fatal(err)
			}
			notFree(t, s, ip)
			if got := mustAdd(t, s, sticky("b", time.Second), target(t, "")); got != ip {
				t.Errorf("K got %s, want %s", got, ip)
			}
		}},
		{"sticky: an operator's release of a held address is refused: the key is released instead", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, ""))
			if err := s.ReleaseAddr(ip, epoch); err == nil || !strings.Contains(err.Error(), `"`+keyK+`"`) {
				t.Fatalf("release of a held address: %v", err)
			}
			notFree(t, s, ip)
		}},
		{"sticky: a held address the config now excludes is freed, and K gets another", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, ""))
			got := mustAdd(t, s, sticky("b", 0), target(t, "", ip.String()))
			if got == ip {
				t.Fatalf("K got its excluded address %s", ip)
			}
			free(t, s, ip)
		}},
		{"sticky: a held address outside today's ranges is freed, and K gets another", func(t *testing.T, s Subject, _ Caps) {
			ip := heldByK(t, s, target(t, "10.0.0.2"))
			tg := target(t, "")
			tg.Set = MustSet(t, rangeFrom("10.0.0.3"))
			got := mustAdd(t, s, sticky("b", 0), tg)
			if got == ip {
				t.Fatalf("K got %s, outside its range set", ip)
			}
			free(t, s, ip)
		}},
		{"sticky: a failed ADD gives a taken-over hold back", func(t *testing.T, s Subject, _ Caps) {
			xs := mustAdd(t, s, call("x"), second())
			ip := heldByK(t, s, target(t, ""))
			tg := second()
			tg.Requested = xs // x's: the second target fails
			c := sticky("b", 0)
			_, err := add(t, s, c, target(t, ""), tg)
			AssertCode(t, err, cnierr.CodeAddrUnavailable)
			notFree(t, s, ip)
			if got := mustAdd(t, s, sticky("c", 0), target(t, "")); got != ip {
				t.Errorf("K got %s after the failed ADD, want %s", got, ip)
			}
		}},
		{"sticky: a failed ADD of a new key leaves no hold", func(t *testing.T, s Subject, _ Caps) {
			tg := second()
			tg.Requested = mustAdd(t, s, call("x"), second())
			_, err := add(t, s, sticky("b", 0), target(t, "10.0.0.4"), tg)
			AssertCode(t, err, cnierr.CodeAddrUnavailable)
			free(t, s, addr("10.0.0.4"))
			if err := s.ReleaseKey(keyK, "", epoch); err == nil {
				t.Error("the failed ADD left K a hold")
			}
		}},
	}
}
