package alloc_test

import (
	"errors"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// head is a chain head's spill records, logging what is asked of it.
type head struct {
	records map[alloc.Attachment]bool
	log     *[]string
}

func (h head) MaySpill(a alloc.Attachment) (bool, error) {
	*h.log = append(*h.log, "may")
	return h.records[a], nil
}

func (h head) RecordSpill(a alloc.Attachment) error {
	*h.log = append(*h.log, "record")
	h.records[a] = true
	return nil
}

func (h head) ForgetSpill(a alloc.Attachment) error {
	*h.log = append(*h.log, "forget")
	delete(h.records, a)
	return nil
}

func (h head) Spills() ([]alloc.Attachment, error) {
	*h.log = append(*h.log, "list")
	return slices.Collect(maps.Keys(h.records)), nil
}

func chainOf(pools ...string) alloc.Target {
	t := alloc.Target{Scope: alloc.Scope{Pool: pools[0]}}
	for _, p := range pools[1:] {
		t.Overflow = append(t.Overflow, alloc.Target{Scope: alloc.Scope{Pool: p}})
	}
	return t
}

// logged is a store's locate and allocate that find nothing and hand
// out nothing, writing each call to log.
func logged(log *[]string) (func(alloc.Target) (alloc.Presence, error), func(alloc.Target) (netip.Prefix, netip.Addr, error)) {
	return func(c alloc.Target) (alloc.Presence, error) {
			*log = append(*log, "locate "+c.Scope.Pool)
			return alloc.Presence{}, nil
		}, func(c alloc.Target) (netip.Prefix, netip.Addr, error) {
			*log = append(*log, "allocate "+c.Scope.Pool)
			return netip.Prefix{}, netip.Addr{}, nil
		}
}

// With the head alone at hand, a pool past it holds nothing of an
// attachment without a spill record, and taking an address there needs
// the whole chain; a record makes the look need it too. The head is
// asked once.
func TestSpillingHeadAlone(t *testing.T) {
	chain := chainOf("a", "b", "c")
	a := alloctest.CidA
	for _, recorded := range []bool{false, true} {
		var log []string
		h := head{records: map[alloc.Attachment]bool{a: recorded}, log: &log}
		onlyHead := func(s alloc.Scope) bool { return s == chain.Scope }
		storeLocate, storeAllocate := logged(&log)
		locate, allocate := alloc.Spilling(chain, a, h, onlyHead, storeLocate, storeAllocate)
		for _, c := range chain.Chain() {
			p, err := locate(c)
			if recorded && c.Scope != chain.Scope {
				if !errors.Is(err, alloc.ErrWholeChain) {
					t.Fatalf("recorded: locate %s = %v, want ErrWholeChain", c.Scope.Pool, err)
				}
				continue
			}
			if err != nil || p != (alloc.Presence{}) {
				t.Fatalf("recorded=%v: locate %s = %+v, %v; want nothing there", recorded, c.Scope.Pool, p, err)
			}
		}
		if _, _, err := allocate(chain); err != nil {
			t.Fatalf("allocate in the head: %v", err)
		}
		if _, _, err := allocate(chain.Overflow[0]); !errors.Is(err, alloc.ErrWholeChain) {
			t.Fatalf("allocate past the head = %v, want ErrWholeChain", err)
		}
		want := []string{"locate a", "may", "allocate a"}
		if !slices.Equal(log, want) {
			t.Errorf("recorded=%v: asked %q, want %q", recorded, log, want)
		}
	}
}

// With the whole chain at hand, the head records the attachment before
// any address past it is taken, and is never asked whether it spilled.
func TestSpillingWholeChain(t *testing.T) {
	chain := chainOf("a", "b")
	a := alloctest.CidA
	var log []string
	h := head{records: map[alloc.Attachment]bool{}, log: &log}
	storeLocate, storeAllocate := logged(&log)
	locate, allocate := alloc.Spilling(chain, a, h, func(alloc.Scope) bool { return true }, storeLocate, storeAllocate)
	for _, c := range chain.Chain() {
		if _, err := locate(c); err != nil {
			t.Fatal(err)
		}
		if _, _, err := allocate(c); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"locate a", "allocate a", "locate b", "record", "allocate b"}
	if !slices.Equal(log, want) || !h.records[a] {
		t.Errorf("asked %q (recorded %v), want %q and a record", log, h.records[a], want)
	}
}

// The heads alone may do only for an ADD with a chain and no sticky key.
func TestHeadsSuffice(t *testing.T) {
	plain, chained := chainOf("a"), chainOf("b", "c")
	for _, tt := range []struct {
		targets []alloc.Target
		key     string
		want    bool
	}{
		{[]alloc.Target{plain}, "", false},
		{[]alloc.Target{plain, chained}, "", true},
		{[]alloc.Target{chained}, "pod-key", false},
	} {
		if got := alloc.HeadsSuffice(tt.targets, tt.key); got != tt.want {
			t.Errorf("HeadsSuffice(%d targets, key %q) = %v, want %v", len(tt.targets), tt.key, got, tt.want)
		}
	}
}

// A DEL's spill records go from every head it covered once it released
// everything, and stay after a DEL that failed anywhere.
func TestForgetSpills(t *testing.T) {
	a := alloctest.CidA
	var log []string
	h1 := head{records: map[alloc.Attachment]bool{a: true}, log: &log}
	h2 := head{records: map[alloc.Attachment]bool{a: true}, log: &log}
	failed := errors.New("release failed")
	if err := alloc.ForgetSpills([]alloc.SpillRecorder{h1, h2}, a, failed); !errors.Is(err, failed) || !h1.records[a] || !h2.records[a] {
		t.Fatalf("after a failed DEL: %v, records %v %v; want its error and both records kept", err, h1.records[a], h2.records[a])
	}
	if err := alloc.ForgetSpills([]alloc.SpillRecorder{h1, h2}, a, nil); err != nil || h1.records[a] || h2.records[a] {
		t.Fatalf("after the DEL: %v, records %v %v; want both gone", err, h1.records[a], h2.records[a])
	}
}

// GC's end of spill records: a record goes when the keep set does not
// keep its attachment on the network it holds, and no other.
func TestGCSpills(t *testing.T) {
	m := alloctest.NewMemStore()
	live := alloc.Attachment{ContainerID: "live", IfName: "eth0", Network: "net"}
	dead := alloc.Attachment{ContainerID: "dead", IfName: "eth0", Network: "net"}
	elsewhere := alloc.Attachment{ContainerID: "dead", IfName: "eth1", Network: "other-net"}
	for _, a := range []alloc.Attachment{live, dead, elsewhere} {
		if err := m.RecordSpill(a); err != nil {
			t.Fatal(err)
		}
	}
	keep := alloc.NewKeepSet("net", []alloc.Attachment{{ContainerID: "live", IfName: "eth0"}}).Keeps
	gone, err := alloc.GCSpills(m, keep)
	if err != nil || !slices.Equal(gone, []alloc.Attachment{dead}) {
		t.Fatalf("GCSpills = %v, %v; want %v alone", gone, err, dead)
	}
	for a, want := range map[alloc.Attachment]bool{live: true, dead: false, elsewhere: true} {
		if got, _ := m.MaySpill(a); got != want {
			t.Errorf("after GC, MaySpill(%s/%s) = %v, want %v", a.ContainerID, a.IfName, got, want)
		}
	}
}
