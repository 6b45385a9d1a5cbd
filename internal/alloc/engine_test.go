package alloc_test

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// claimOnly is a Store and nothing more, as ipam-da-etcd's claims are:
// no cursor to move, no duplicate check by the engine, no ledger.
type claimOnly struct {
	held      map[netip.Addr]bool
	start     netip.Addr
	exhausted []int
	fail      error
}

func (c *claimOnly) Reserve(_ alloc.Attachment, ip netip.Addr) (bool, error) {
	if c.fail != nil {
		return false, c.fail
	}
	if c.held[ip] {
		return false, nil
	}
	c.held[ip] = true
	return true, nil
}

func (c *claimOnly) LastReserved(int) (netip.Addr, error) { return c.start, nil }

func (c *claimOnly) MarkExhausted(id int) error {
	c.exhausted = append(c.exhausted, id)
	return c.fail
}

// A plain Store is searched from where it says, moves no cursor and
// leaves duplicates to Reserve; exhaustion is still recorded.
func TestAllocateOverPlainStore(t *testing.T) {
	rs := alloctest.Small(t)
	s := &claimOnly{held: map[netip.Addr]bool{}, start: netip.MustParseAddr("10.0.0.4")}
	al := alloc.New(s)
	for _, want := range []string{"10.0.0.5", "10.0.0.6", "10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		p, gw, err := al.Allocate(alloctest.CidA, 0, rs, netip.Addr{}, "r")
		if err != nil || p.Addr() != netip.MustParseAddr(want) || gw != netip.MustParseAddr("10.0.0.1") {
			t.Fatalf("allocate = %v %v %v, want %s", p, gw, err, want)
		}
	}
	_, _, err := al.Allocate(alloctest.CidA, 3, rs, netip.Addr{}, "r")
	alloctest.AssertCode(t, err, cnierr.CodePoolExhausted)
	if !slices.Equal(s.exhausted, []int{3}) {
		t.Errorf("exhausted = %v", s.exhausted)
	}
	if _, err := al.AllocateShared(alloctest.CidA, 0, rs, netip.Addr{}, "r"); cnierr.Code(err) != cnierr.CodePoolExhausted {
		t.Errorf("shared on a full set: %v", err)
	}
	// Store failures come back as they are.
	boom := errors.New("boom")
	s.fail = boom
	if _, _, err := al.Allocate(alloctest.CidB, 0, alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.1.0.0/29"}), netip.Addr{}, "r"); !errors.Is(err, boom) {
		t.Errorf("reserve failure = %v", err)
	}
	if _, _, err := al.Allocate(alloctest.CidB, 0, alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.1.0.0/29"}), netip.MustParseAddr("10.1.0.3"), "r"); !errors.Is(err, boom) {
		t.Errorf("requested reserve failure = %v", err)
	}
	if _, _, err := al.Allocate(alloctest.CidB, 0, alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.1.0.0/30"}), netip.Addr{}, "r"); err == nil {
		t.Error("no error")
	}
}

// An attachment that no store could record is refused before any store
// is asked.
func TestAllocateUnrecordable(t *testing.T) {
	m := alloctest.NewMemStore()
	for _, a := range []alloc.Attachment{{}, {ContainerID: " x", IfName: "eth0"}, {ContainerID: "x", IfName: "eth\n0"}, {ContainerID: "x", Network: "a b"}} {
		_, _, err := alloc.New(m).Allocate(a, 0, alloctest.Small(t), netip.Addr{}, "r")
		alloctest.AssertCode(t, err, 4)
	}
	if all, _ := m.All(); len(all) != 0 {
		t.Errorf("reserved %v", all)
	}
}

// failing is a Lister whose every call fails.
type failing struct{ err error }

func (f failing) Reserve(alloc.Attachment, netip.Addr) (bool, error) { return false, f.err }
func (f failing) Owner(netip.Addr) (alloc.Attachment, bool, error) {
	return alloc.Attachment{}, false, f.err
}
func (f failing) Release(alloc.Attachment, netip.Addr) (bool, error)  { return false, f.err }
func (f failing) ByAttachment(alloc.Attachment) ([]netip.Addr, error) { return nil, f.err }
func (f failing) All() (map[netip.Addr]alloc.Attachment, error)       { return nil, f.err }
func (f failing) LastReserved(int) (netip.Addr, error)                { return netip.Addr{}, f.err }
func (f failing) SetLastReserved(int, netip.Addr) error               { return f.err }
func (f failing) MarkExhausted(int) error                             { return f.err }
func (f failing) ClearExhausted() error                               { return f.err }

// Every ledger operation passes a store failure on, as it is.
func TestLedgerFailures(t *testing.T) {
	boom := errors.New("boom")
	l := failing{boom}
	ips := []netip.Addr{netip.MustParseAddr("10.0.0.2")}
	checks := map[string]error{}
	_, checks["Release"] = alloc.Release(l, alloctest.CidA, ips)
	checks["Check"] = alloc.Check(l, alloctest.CidA, ips)
	_, checks["Held"] = alloc.Held(l, alloctest.CidA)
	_, _, checks["GC"] = alloc.CollectGC(l, func(alloc.Attachment) bool { return false }, time.Now())
	checks["Rollback"] = alloc.Rollback(l, alloctest.CidA, ips)
	_, checks["Free"] = alloc.Free(l, alloctest.CidA, ips)
	_, _, checks["Allocate"] = alloc.New(l).Allocate(alloctest.CidA, 0, alloctest.Small(t), netip.Addr{}, "r")
	_, _, checks["Allocate requested"] = alloc.New(l).Allocate(alloctest.CidA, 0, alloctest.Small(t), netip.MustParseAddr("10.0.0.2"), "r")
	for name, err := range checks {
		if !errors.Is(err, boom) {
			t.Errorf("%s: %v, want the store's error", name, err)
		}
	}
}

// GC over a store whose listing works but whose releases fail keeps
// going and reports every failure.
type releaseFails struct {
	*alloctest.MemStore
	err error
}

func (r releaseFails) Release(alloc.Attachment, netip.Addr) (bool, error) { return false, r.err }

func TestGCKeepsGoing(t *testing.T) {
	m := alloctest.NewMemStore()
	for _, ip := range []string{"10.0.0.2", "10.0.0.3"} {
		if _, err := m.Reserve(alloctest.CidA, netip.MustParseAddr(ip)); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("boom")
	released, _, err := alloc.CollectGC(releaseFails{m, boom}, func(alloc.Attachment) bool { return false }, time.Now())
	if len(released) != 0 || !errors.Is(err, boom) || strings.Count(err.Error(), "boom") != 2 {
		t.Errorf("gc = %v, %v", released, err)
	}
}

// A cursor that cannot be moved undoes the reservation, and says why
// twice when the undo fails too.
type cursorAndReleaseFail struct {
	*alloctest.MemStore
}

func (cursorAndReleaseFail) SetLastReserved(int, netip.Addr) error { return errors.New("disk full") }
func (cursorAndReleaseFail) Release(alloc.Attachment, netip.Addr) (bool, error) {
	return false, errors.New("read-only")
}

func TestAllocateCursorFailure(t *testing.T) {
	m := alloctest.NewMemStore()
	_, _, err := alloc.New(cursorFails{m}).Allocate(alloctest.CidA, 0, alloctest.Small(t), netip.Addr{}, "r")
	if err == nil || err.Error() != "disk full" {
		t.Errorf("err = %v", err)
	}
	if all, _ := m.All(); len(all) != 0 {
		t.Errorf("left %v", all)
	}
	_, _, err = alloc.New(cursorAndReleaseFail{alloctest.NewMemStore()}).Allocate(alloctest.CidA, 0, alloctest.Small(t), netip.Addr{}, "r")
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("err = %v", err)
	}
}

func TestAttachmentProblem(t *testing.T) {
	for _, tt := range []struct {
		a    alloc.Attachment
		want string // a word of the problem; "" for none
	}{
		{alloc.Attachment{ContainerID: "abc", IfName: "eth0"}, ""},
		{alloc.Attachment{ContainerID: "abc"}, ""},
		{alloc.Attachment{ContainerID: "abc", IfName: "eth0", Network: "net-1"}, ""},
		{alloc.Attachment{ContainerID: "_docker", IfName: "pool,10.0.0.0/24 x"}, ""},
		{alloc.Attachment{}, "empty"},
		{alloc.Attachment{ContainerID: "abc ", IfName: "eth0"}, "white space"},
		{alloc.Attachment{ContainerID: "_do/cker", IfName: "x"}, "owner kind"},
		{alloc.Attachment{ContainerID: "-abc", IfName: "eth0"}, "container ID"},
		{alloc.Attachment{ContainerID: "a/b", IfName: "eth0"}, "container ID"},
		{alloc.Attachment{ContainerID: "abc", IfName: "eth0/1"}, "interface name"},
		{alloc.Attachment{ContainerID: "abc", IfName: "eth0", Network: ".n"}, "network name"},
	} {
		got := tt.a.Problem()
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%+v: Problem() = %q, want %q", tt.a, got, tt.want)
		}
	}
}

func TestResult(t *testing.T) {
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("# c\nnameserver 10.0.0.53\nnameserver fd00::53\ndomain example.org\nsearch a.example b.example\noptions ndots:2\n; x\nbogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ipamconf.Parse(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","ipam":{"subnet":"10.0.0.0/24","resolvConf":"`+resolv+`",
		"routes":[{"dst":"0.0.0.0/0"}]}}`), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.NewResult()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.DNS.Nameservers, []string{"10.0.0.53", "fd00::53"}) || res.DNS.Domain != "example.org" ||
		!slices.Equal(res.DNS.Search, []string{"a.example", "b.example"}) || !slices.Equal(res.DNS.Options, []string{"ndots:2"}) || len(res.Routes) != 1 {
		t.Errorf("result = %+v", res)
	}
	ipc := alloc.IPConfig(netip.MustParsePrefix("10.0.0.5/24"), netip.MustParseAddr("10.0.0.1"))
	if ipc.Address.String() != "10.0.0.5/24" || ipc.Gateway.String() != "10.0.0.1" {
		t.Errorf("ipconfig = %+v", ipc)
	}
	if ipc := alloc.IPConfig(netip.MustParsePrefix("fd00::5/64"), netip.Addr{}); ipc.Address.String() != "fd00::5/64" || ipc.Gateway != nil {
		t.Errorf("ipconfig = %+v", ipc)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 65<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), dir, big} {
		c.ResolvConf = bad
		_, err := c.NewResult()
		alloctest.AssertCode(t, err, 7)
	}
}

// CHECK places each address in its target, STATUS adds the defined pools,
// DEL and GC know the scopes without ranges.
func TestScopesAndPlacement(t *testing.T) {
	c, err := ipamconf.Parse(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","ipam":{"ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"fd00::/64"}]]}}`), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.PoolMode() || !slices.Equal(c.Scopes(), []alloc.Scope{{Network: "n"}}) {
		t.Errorf("standalone scopes = %v", c.Scopes())
	}
	ts, err := c.Targets()
	if err != nil {
		t.Fatal(err)
	}
	prev := func(ips ...string) *netconf.Envelope {
		var list []string
		for _, ip := range ips {
			list = append(list, `{"address":"`+ip+`"}`)
		}
		return alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","prevResult":{"cniVersion":"1.0.0","ips":[`+strings.Join(list, ",")+`]}}`)
	}
	checkList := func(conf *netconf.Envelope) ([]netip.Addr, []alloc.Target, error) {
		addrs, err := ipamconf.PrevAddrs(conf)
		if err != nil {
			return nil, nil, err
		}
		placed, err := alloc.CheckList(addrs, ts)
		return addrs, placed, err
	}
	addrs, placed, err := checkList(prev("fd00::9/64", "10.1.0.9/24"))
	if err != nil || len(addrs) != 2 || placed[0].RangeID != 1 || placed[1].RangeID != 0 {
		t.Errorf("placed = %v %+v, %v", addrs, placed, err)
	}
	_, _, err = checkList(prev("10.2.0.1/24"))
	alloctest.AssertCode(t, err, 3)
	if addrs, placed, err := checkList(prev()); err != nil || len(addrs)+len(placed) != 0 {
		t.Errorf("nothing to check = %v %v %v", addrs, placed, err)
	}
	_, _, err = checkList(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","prevResult":{"cniVersion":"1.0.0","ips":7}}`))
	if err == nil {
		t.Error("a broken prevResult was read")
	}
	if p, _, err := ts[0].Allocator(alloctest.NewMemStore()).Allocate(alloctest.CidA, 0, ts[0].Set, netip.Addr{}, ts[0].Label); err != nil || p.Addr() != netip.MustParseAddr("10.1.0.2") {
		t.Errorf("target allocator = %v, %v", p, err)
	}

	c, err = ipamconf.Parse(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","ipam":{"poolDefinitions":{"b":[{"subnet":"10.5.0.0/24"}],"a":[{"subnet":"10.6.0.0/24"}]}},
		"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"b"}]}}`), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !c.PoolMode() || !slices.Equal(c.Scopes(), []alloc.Scope{{Pool: "b"}}) || len(c.PoolDefs.Overflows) != 2 {
		t.Errorf("pool scopes = %v, definitions %v", c.Scopes(), c.PoolDefs)
	}
	ts, err = c.Targets()
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, t := range ts {
		labels = append(labels, t.Label+"/"+t.Scope.Pool)
	}
	if !slices.Equal(labels, []string{"pool b/b"}) {
		t.Errorf("targets = %v, want only the selected pool (a defined pool no selector names is no concern of this network)", labels)
	}
}
