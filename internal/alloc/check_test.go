package alloc_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
)

// checkTargets are a standalone dual-stack network (range sets 0 and 1
// of network n) and, in pool mode, pool a overflowing into b, and pool c.
func checkTargets(t *testing.T) (standalone, pools []alloc.Target) {
	set := func(subnet string) addrspace.RangeSet {
		return alloctest.MustSet(t, addrspace.RangeConfig{Subnet: subnet})
	}
	n := alloc.Scope{Network: "n"}
	standalone = []alloc.Target{
		{Label: "range set 0", Scope: n, Set: set("10.1.0.0/24")},
		{Label: "range set 1", Scope: n, RangeID: 1, Set: set("fd00::/64")},
	}
	pools = []alloc.Target{
		{Label: "pool a", Scope: alloc.Scope{Pool: "a"}, Set: set("10.5.0.0/29"),
			Overflow: []alloc.Target{{Label: "pool b", Scope: alloc.Scope{Pool: "b"}, Set: set("10.6.0.0/29")}}},
		{Label: "pool c", Scope: alloc.Scope{Pool: "c"}, Set: set("10.7.0.0/29")},
	}
	return standalone, pools
}

// CHECK without addresses, the rule both allocators share: every target
// holds an address of the attachment in its ranges or its overflow
// pools', else code 3 naming the first that does not, in one shape.
func TestCheckHeld(t *testing.T) {
	standalone, pools := checkTargets(t)
	n, a, b, c := alloc.Scope{Network: "n"}, alloc.Scope{Pool: "a"}, alloc.Scope{Pool: "b"}, alloc.Scope{Pool: "c"}
	ips := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		targets []alloc.Target
		held    map[alloc.Scope][]netip.Addr
		details string // "" succeeds
	}{
		{"both families", standalone, map[alloc.Scope][]netip.Addr{n: ips("10.1.0.2", "fd00::2")}, ""},
		{"one family of two", standalone, map[alloc.Scope][]netip.Addr{n: ips("10.1.0.2")}, "range set 1: containerID=cid-a ifname=eth0"},
		{"nothing", standalone, nil, "range set 0: containerID=cid-a ifname=eth0"},
		{"only addresses the ranges left out", standalone, map[alloc.Scope][]netip.Addr{n: ips("10.9.0.2", "fd09::2")}, "range set 0: containerID=cid-a ifname=eth0"},
		{"each pool, the first of the chain", pools, map[alloc.Scope][]netip.Addr{a: ips("10.5.0.2"), c: ips("10.7.0.2")}, ""},
		{"each pool, the chain's overflow", pools, map[alloc.Scope][]netip.Addr{b: ips("10.6.0.2"), c: ips("10.7.0.2")}, ""},
		{"one pool of two", pools, map[alloc.Scope][]netip.Addr{a: ips("10.5.0.2")}, "pool c: containerID=cid-a ifname=eth0"},
		{"a chain with nothing", pools, map[alloc.Scope][]netip.Addr{c: ips("10.7.0.2")}, "pool a or pool b: containerID=cid-a ifname=eth0"},
		{"an address in another pool's scope", pools, map[alloc.Scope][]netip.Addr{a: ips("10.6.0.2"), c: ips("10.7.0.2")}, "pool a or pool b: containerID=cid-a ifname=eth0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked []alloc.Scope
			err := alloc.CheckHeld(tt.targets, alloctest.CidA, func(scopes []alloc.Scope) (map[alloc.Scope][]netip.Addr, error) {
				asked = scopes
				return tt.held, nil
			})
			if want := map[bool][]alloc.Scope{true: {n}, false: {a, b, c}}[tt.targets[0].Scope == n]; !slices.Equal(asked, want) {
				t.Errorf("asked for scopes %v, want %v: each once, overflow pools included", asked, want)
			}
			if tt.details == "" {
				if err != nil {
					t.Fatalf("= %v, want success", err)
				}
				return
			}
			var e *types.Error
			if !errors.As(err, &e) || e.Code != 3 || e.Msg != "attachment holds no address" || e.Details != tt.details {
				t.Fatalf("= %#v, want code 3, attachment holds no address, %q", err, tt.details)
			}
		})
	}
	boom := errors.New("boom")
	if err := alloc.CheckHeld(pools, alloctest.CidA, func([]alloc.Scope) (map[alloc.Scope][]netip.Addr, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("a store's failure = %v, want it as it is", err)
	}
}

// CheckPrev verifies prevResult's addresses when it lists any, and asks
// for the attachment's holdings (CheckHeld) only when it lists none.
func TestCheckPrev(t *testing.T) {
	standalone, _ := checkTargets(t)
	for _, tt := range []struct {
		name, conf string
		checked    bool // the addresses were verified, else holdings asked
	}{
		{"addresses", `{"cniVersion":"1.0.0","name":"n","prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.2/24"}]}}`, true},
		{"a prevResult without addresses", `{"cniVersion":"1.0.0","name":"n","prevResult":{"cniVersion":"1.0.0"}}`, false},
		{"no prevResult", `{"cniVersion":"1.0.0","name":"n"}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checked, asked := false, false
			addrs, err := ipamconf.PrevAddrs(alloctest.Envelope(t, tt.conf))
			if err != nil {
				t.Fatal(err)
			}
			err = alloc.CheckPrev(addrs, standalone, alloctest.CidA,
				func([]alloc.Scope) (map[alloc.Scope][]netip.Addr, error) {
					asked = true
					return map[alloc.Scope][]netip.Addr{{Network: "n"}: {netip.MustParseAddr("10.1.0.2"), netip.MustParseAddr("fd00::2")}}, nil
				},
				func(addrs []netip.Addr, placed []alloc.Target) error {
					checked = len(addrs) == 1 && placed[0].Label == "range set 0"
					return nil
				})
			if err != nil || checked != tt.checked || asked == tt.checked {
				t.Errorf("= %v, verified %v, holdings asked %v", err, checked, asked)
			}
		})
	}
}

// CheckScopes reads each scope once, prevResult's addresses grouped by
// the scope they were placed in; a scope with no state holds nothing (code
// 3 naming its first address), and without addresses CheckHeld judges
// what the attachment holds in each scope.
func TestCheckScopes(t *testing.T) {
	_, pools := checkTargets(t)
	a, c := alloc.Scope{Pool: "a"}, alloc.Scope{Pool: "c"}
	ledgers := map[alloc.Scope]alloc.Ledger{a: alloctest.NewMemStore()}
	for _, ip := range []string{"10.5.0.2", "10.5.0.3"} {
		if ok, err := ledgers[a].Reserve(alloctest.CidA, netip.MustParseAddr(ip)); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	var reads [][]alloc.Scope
	read := func(scopes []alloc.Scope, fn func(alloc.Scope, alloc.Ledger) error) error {
		reads = append(reads, scopes)
		for _, s := range scopes {
			if err := fn(s, ledgers[s]); err != nil {
				return err
			}
		}
		return nil
	}
	ips := []netip.Addr{netip.MustParseAddr("10.5.0.2"), netip.MustParseAddr("10.7.0.2"), netip.MustParseAddr("10.5.0.3")}
	err := alloc.CheckScopes(ips, pools, alloctest.CidA, read)
	var e *types.Error
	if !errors.As(err, &e) || e.Code != 3 || e.Details != "address=10.7.0.2 containerID=cid-a ifname=eth0" {
		t.Errorf("an address in a scope with no state = %v, want code 3 naming it", err)
	}
	if !slices.Equal(reads[0], []alloc.Scope{a, c}) {
		t.Errorf("read %v, want each placed scope once, in the addresses' order", reads)
	}
	if err := alloc.CheckScopes([]netip.Addr{ips[0], ips[2]}, pools, alloctest.CidA, read); err != nil {
		t.Errorf("both held = %v", err)
	}
	if err := alloc.CheckScopes([]netip.Addr{ips[0]}, pools, alloctest.CidB, read); !errors.As(err, &e) || e.Code != 3 {
		t.Errorf("another's address = %v, want code 3", err)
	}
	ledgers[c] = alloctest.NewMemStore()
	if ok, err := ledgers[c].Reserve(alloctest.CidA, ips[1]); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := alloc.CheckScopes(nil, pools, alloctest.CidA, read); err != nil {
		t.Errorf("without addresses, each pool held = %v", err)
	}
	delete(ledgers, c)
	if err := alloc.CheckScopes(nil, pools, alloctest.CidA, read); !errors.As(err, &e) || e.Msg != "attachment holds no address" {
		t.Errorf("without addresses, pool c with no state = %v, want code 3", err)
	}
}
