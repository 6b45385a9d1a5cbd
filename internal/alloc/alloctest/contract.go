package alloctest

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Subject is a store as the contract drives it: the engine's operations
// on it, each a whole CNI command (a store that must be opened and
// closed around a command opens and closes it in each call).
type Subject interface {
	// Add reserves one address per target for c.Att, all or nothing.
	Add(c Call, targets []alloc.Target) ([]netip.Prefix, error)
	// Del releases what c.Att holds (hints: prevResult's addresses).
	Del(c Call, hints []netip.Addr) error
	// Check verifies that each ip is c.Att's.
	Check(c Call, ips []netip.Addr) error
	// GC releases what no attachment of live owns, at now.
	GC(live []alloc.Attachment, now time.Time) error
	// ReleaseKey is an operator's release of key's holds (on ifname,
	// every interface when "").
	ReleaseKey(key, ifname string, now time.Time) error
	// ReleaseAddr is an operator's release of the address ip.
	ReleaseAddr(ip netip.Addr, now time.Time) error
	// Status is STATUS for a selection of targets: 50 when none of them
	// can be served.
	Status(targets []alloc.Target, now time.Time) error
}

// Call is who a command is for: the attachment, its sticky key ("" for
// none) with the holdFor of its configuration, and the time it runs at.
type Call struct {
	Att     alloc.Attachment
	Key     string
	HoldFor time.Duration
	Now     time.Time
	// Migration is the ADD's migration name (alloc.Keyed.Migration).
	Migration string
	// Quota is the selection's tenant quota (nil none).
	Quota *pool.Quota
}

// Caps are what a store does beyond the contract's common rules.
type Caps struct {
	// Cursor: the search starts after the last address handed out
	// (host-local's round-robin). Without it the store chooses its start
	// and the contract checks only that every address is handed out once.
	Cursor bool
	// Migration: a key's address may have a second (migration) owner
	// (docs/sticky.md, KubeVirt live migration). Without it a migration
	// target waits for its source's DEL (105).
	Migration bool
}

// Case is one row of the contract.
type Case struct {
	Name string
	Run  func(t *testing.T, s Subject, caps Caps)
}

// epoch is the contract's clock: every call says its time.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// RunStoreContract runs every case on a fresh subject from open.
func RunStoreContract(t *testing.T, caps Caps, open func(t *testing.T) Subject) {
	for _, c := range StoreContract() {
		t.Run(c.Name, func(t *testing.T) { c.Run(t, open(t), caps) })
	}
}

// pool is the contract's scope, a pool shared by networks.
var scope = alloc.Scope{Pool: "p"}

func target(t *testing.T, requested string, exclude ...string) alloc.Target {
	ex, err := addrspace.ParseExclusions("exclude", exclude)
	if err != nil {
		t.Fatal(err)
	}
	tg := alloc.Target{Label: "pool p", Scope: scope, Set: Small(t), Exclude: ex}
	if requested != "" {
		tg.Requested = netip.MustParseAddr(requested)
	}
	return tg
}

// second is pool s, the second target of a two-address ADD. Its range
// set has an index of its own, so that a store holding every pool in one
// place (MemStore) keeps its cursor apart.
func second() alloc.Target {
	return alloc.Target{Label: "pool s", Scope: alloc.Scope{Pool: "s"}, RangeID: 1, Set: set("10.1.0.0/29")}
}

// att is attachment n of network net.
func att(n string) alloc.Attachment {
	return alloc.Attachment{ContainerID: "cid-" + n, IfName: "eth0", Network: "net"}
}

func call(n string) Call { return Call{Att: att(n), Now: epoch} }

func add(t *testing.T, s Subject, c Call, tg ...alloc.Target) (netip.Addr, error) {
	t.Helper()
	ps, err := s.Add(c, tg)
	if err != nil {
		if len(ps) != 0 {
			t.Fatalf("a failed ADD returned %v", ps)
		}
		return netip.Addr{}, err
	}
	if len(ps) != len(tg) {
		t.Fatalf("ADD returned %d addresses for %d targets", len(ps), len(tg))
	}
	for i, p := range ps {
		if !slices.ContainsFunc(tg[i].Chain(), func(c alloc.Target) bool { return c.Set.Contains(p.Addr()) }) || p.Bits() != 29 {
			t.Fatalf("ADD returned %v, not in %s or its overflow", p, tg[i].Set)
		}
	}
	return ps[0].Addr(), nil
}

func mustAdd(t *testing.T, s Subject, c Call, tg ...alloc.Target) netip.Addr {
	t.Helper()
	ip, err := add(t, s, c, tg...)
	if err != nil {
		t.Fatalf("ADD %s: %v", c.Att.ContainerID, err)
	}
	return ip
}

func mustDel(t *testing.T, s Subject, c Call, hints ...netip.Addr) {
	t.Helper()
	if err := s.Del(c, hints); err != nil {
		t.Fatalf("DEL %s: %v", c.Att.ContainerID, err)
	}
}

func mustGC(t *testing.T, s Subject, now time.Time, live ...alloc.Attachment) {
	t.Helper()
	if err := s.GC(live, now); err != nil {
		t.Fatalf("GC: %v", err)
	}
}

// fill takes every free address of Small for attachments named f0, f1, …
// and returns them; the pool then answers 100.
func fill(t *testing.T, s Subject, tg alloc.Target) []netip.Addr {
	t.Helper()
	var got []netip.Addr
	for i := range 6 { // Small has 5 usable addresses: the 6th must fail
		ip, err := add(t, s, call("f"+string(rune('0'+i))), tg)
		if cnierr.Code(err) == cnierr.CodePoolExhausted {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip)
	}
	t.Fatalf("the pool never filled: %v", got)
	return nil
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// StoreContract is the table of the engine's behaviours every store must
// give.
func StoreContract() []Case {
	return slices.Concat(plainContract(), stickyContract(), migrationContract(), crashContract(), overflowContract(), quotaContract())
}

func plainContract() []Case {
	return []Case{
		{"every address handed out once, in order", func(t *testing.T, s Subject, caps Caps) {
			got := fill(t, s, target(t, ""))
			if caps.Cursor && !slices.Equal(got, []netip.Addr{addr("10.0.0.2"), addr("10.0.0.3"), addr("10.0.0.4"), addr("10.0.0.5"), addr("10.0.0.6")}) {
				t.Errorf("order %v", got)
			}
			slices.SortFunc(got, netip.Addr.Compare)
			if len(slices.Compact(got)) != 5 {
				t.Errorf("an address handed out twice: %v", got)
			}
		}},
		{"round robin: a freed address comes after the others", func(t *testing.T, s Subject, caps Caps) {
			a := mustAdd(t, s, call("a"), target(t, ""))
			mustDel(t, s, call("a"))
			b := mustAdd(t, s, call("b"), target(t, ""))
			if caps.Cursor && b == a {
				t.Errorf("the freed %s handed out again before the others", a)
			}
		}},
		{"requested address", func(t *testing.T, s Subject, _ Caps) {
			if ip := mustAdd(t, s, call("a"), target(t, "10.0.0.5")); ip != addr("10.0.0.5") {
				t.Errorf("got %s", ip)
			}
		}},
		{"one claim per address: a requested address taken is 101", func(t *testing.T, s Subject, _ Caps) {
			mustAdd(t, s, call("a"), target(t, "10.0.0.5"))
			_, err := add(t, s, call("b"), target(t, "10.0.0.5"))
			AssertCode(t, err, cnierr.CodeAddrUnavailable)
			if err := s.Check(call("a"), []netip.Addr{addr("10.0.0.5")}); err != nil {
				t.Errorf("the owner lost it: %v", err)
			}
		}},
		{"requested gateway, network, outside or excluded address is 101", func(t *testing.T, s Subject, _ Caps) {
			for _, tg := range []alloc.Target{target(t, "10.0.0.1"), target(t, "10.0.0.0"), target(t, "10.0.0.7"),
				target(t, "10.9.0.2"), target(t, "10.0.0.3", "10.0.0.3")} {
				_, err := add(t, s, call("a"), tg)
				AssertCode(t, err, cnierr.CodeAddrUnavailable)
			}
		}},
		{"exclusions are never handed out", func(t *testing.T, s Subject, _ Caps) {
			tg := target(t, "", "10.0.0.2", "10.0.0.4/31")
			got := fill(t, s, tg)
			slices.SortFunc(got, netip.Addr.Compare)
			if !slices.Equal(got, []netip.Addr{addr("10.0.0.3"), addr("10.0.0.6")}) {
				t.Errorf("handed out %v", got)
			}
		}},
		{"exhaustion is 100, and STATUS 50, until an address is freed", func(t *testing.T, s Subject, _ Caps) {
			if err := s.Status([]alloc.Target{target(t, "")}, epoch); err != nil {
				t.Fatalf("STATUS of an empty pool: %v", err)
			}
			got := fill(t, s, target(t, ""))
			AssertCode(t, s.Status([]alloc.Target{target(t, "")}, epoch), cnierr.CodeNotAvailable)
			mustDel(t, s, call("f2"))
			if err := s.Status([]alloc.Target{target(t, "")}, epoch); err != nil {
				t.Errorf("STATUS after a DEL freed %s: %v", got[2], err)
			}
			if ip := mustAdd(t, s, call("x"), target(t, "")); ip != got[2] {
				t.Errorf("after freeing %s got %s", got[2], ip)
			}
		}},
		{"a second address of one range set is 102", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, call("a"), target(t, ""))
			_, err := add(t, s, call("a"), target(t, ""))
			AssertCode(t, err, cnierr.CodeDuplicateAttach)
			if err := s.Check(call("a"), []netip.Addr{ip}); err != nil {
				t.Errorf("the first address lost: %v", err)
			}
		}},
		{"a failed ADD leaves nothing", func(t *testing.T, s Subject, _ Caps) {
			tg := second()
			tg.Requested = mustAdd(t, s, call("b"), second())
			ip := mustAdd(t, s, call("a"), target(t, "10.0.0.4"))
			// c asks for b's address in the second target: the ADD fails there
			_, err := add(t, s, call("c"), target(t, ""), tg)
			AssertCode(t, err, cnierr.CodeAddrUnavailable)
			if err := s.Check(call("c"), nil); cnierr.Code(err) != cnierr.CodeUnknownContainer {
				t.Errorf("the failed ADD left something: CHECK = %v", err)
			}
			if err := s.Check(call("a"), []netip.Addr{ip}); err != nil {
				t.Errorf("an earlier reservation lost: %v", err)
			}
		}},
		{"DEL frees, and again is no error", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, call("a"), target(t, ""))
			mustDel(t, s, call("a"), ip)
			mustDel(t, s, call("a"), ip)
			mustDel(t, s, call("never-added"))
			if got := mustAdd(t, s, call("b"), target(t, ip.String())); got != ip {
				t.Errorf("freed address not reusable: %s", got)
			}
		}},
		{"DEL frees only the attachment's own", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, call("a"), target(t, ""))
			mustDel(t, s, call("b"), ip) // b names a's address as a hint
			other := call("a")
			other.Att.IfName = "net1"
			mustDel(t, s, other, ip)
			if err := s.Check(call("a"), []netip.Addr{ip}); err != nil {
				t.Errorf("another attachment's DEL freed it: %v", err)
			}
		}},
		{"CHECK: the owner's addresses only", func(t *testing.T, s Subject, _ Caps) {
			ip := mustAdd(t, s, call("a"), target(t, ""))
			if err := s.Check(call("a"), []netip.Addr{ip}); err != nil {
				t.Errorf("owner: %v", err)
			}
			AssertCode(t, s.Check(call("b"), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
			AssertCode(t, s.Check(call("a"), []netip.Addr{addr("10.0.0.6")}), cnierr.CodeUnknownContainer)
		}},
		{"GC frees what no valid attachment owns", func(t *testing.T, s Subject, _ Caps) {
			a := mustAdd(t, s, call("a"), target(t, ""))
			b := mustAdd(t, s, call("b"), target(t, ""))
			mustGC(t, s, epoch, att("a"))
			if err := s.Check(call("a"), []netip.Addr{a}); err != nil {
				t.Errorf("a valid attachment lost its address: %v", err)
			}
			AssertCode(t, s.Check(call("b"), []netip.Addr{b}), cnierr.CodeUnknownContainer)
			if got := mustAdd(t, s, call("c"), target(t, b.String())); got != b {
				t.Errorf("GC'd address not free: %s", got)
			}
		}},
	}
}
