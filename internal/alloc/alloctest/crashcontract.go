package alloctest

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// The crash states of a KubeVirt live migration (docs/sticky.md, "Crash
// safety of the hand-over"): each command of a hand-over stopped after
// each of its steps in turn, then the commands a runtime sends next,
// retried without the key (a DEL after a restart may come without the
// pod's name or annotations). Every store must converge: the records,
// as kept, name exactly the owners the addresses have.

// maxCrashSteps bounds the steps of one command; a command that still
// crashes after it has not converged.
const maxCrashSteps = 24

// pod is the name of virt-launcher pod n of step's VM: each crash step
// has a VM of its own.
func pod(n string, step int) string { return fmt.Sprintf("%s%d", n, step) }

// vm is pod n of step's VM, whose key is vmKey(step), for migration mig
// ("" for none). call(pod(n, step)) is the same pod's DEL as a runtime
// may send it after a restart: without the key.
func vm(n string, step int, mig string) Call {
	c := call(pod(n, step))
	c.Key, c.HoldFor, c.Migration = vmKey(step), time.Minute, mig
	return c
}

func vmKey(step int) string { return fmt.Sprintf("ns/vm/vm-%d", step) }

// crashAt runs cmd with a crash after each step in turn, each time on a
// fresh VM that setup prepares (returning its address), and after calls
// then, which must leave the VM's key free again for the next step. It
// ends once cmd runs whole.
func crashAt(t *testing.T, s Subject, caps Caps, setup func(step int) netip.Addr, cmd func(step int, ip netip.Addr) error,
	then func(step int, ip netip.Addr)) {
	t.Helper()
	cs, ok := s.(Crashable)
	if !ok || !caps.Migration {
		t.Skip("the store cannot crash a command, or keeps no migration")
	}
	for step := 0; step < maxCrashSteps; step++ {
		ip := setup(step)
		cs.CrashAfter(step)
		err := cmd(step, ip)
		if step == 0 && err == nil {
			// Every command crashed here writes: one stopped before its
			// first write cannot have succeeded.
			t.Fatal("a command stopped before its first step succeeded: the subject does not crash it")
		}
		then(step, ip)
		if err == nil {
			return
		}
	}
	t.Fatalf("the command still crashed after %d steps", maxCrashSteps)
}

// recordsSay asserts that the records, as the store keeps them, give
// step's key's address to pod owner alone ("" for held), and name none of
// the pods gone.
func recordsSay(t *testing.T, s Subject, step int, owner string, gone ...string) {
	t.Helper()
	holds, err := s.(Crashable).Holds()
	if err != nil {
		t.Fatal(err)
	}
	key := vmKey(step)
	if owner != "" {
		owner = att(pod(owner, step)).ContainerID
	}
	found := false
	for _, h := range holds {
		for _, g := range gone {
			if g = att(pod(g, step)).ContainerID; h.Owner == g || h.Second == g {
				t.Errorf("step %d: the record of %s still names %s: %+v", step, h.Key, g, h)
			}
		}
		if h.Key != key {
			continue
		}
		found = true
		if h.Owner != owner || h.Second != "" {
			t.Errorf("step %d: the record of %s is %+v, want owner %q alone", step, key, h, owner)
		}
	}
	if !found {
		t.Errorf("step %d: no record of %s: %+v", step, key, holds)
	}
}

// migrating is step's VM with source a live and target b (migration m1)
// sharing its address.
func migrating(t *testing.T, s Subject, step int) netip.Addr {
	t.Helper()
	ip := mustAdd(t, s, vm("a", step, ""), target(t, ""))
	if got := mustAdd(t, s, vm("b", step, "m1"), target(t, "")); got != ip {
		t.Fatalf("step %d: the target got %s, want %s", step, got, ip)
	}
	return ip
}

// done ends step's VM: every listed attachment deleted, then its key
// released, so that its address is free for the next step.
func done(t *testing.T, s Subject, step int, ns ...string) {
	t.Helper()
	for _, n := range ns {
		mustDel(t, s, vm(n, step, ""))
	}
	if err := s.ReleaseKey(vmKey(step), "", epoch); err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
}

func crashContract() []Case {
	delSource := func(s Subject) func(int, netip.Addr) error {
		return func(step int, ip netip.Addr) error { return s.Del(vm("a", step, ""), []netip.Addr{ip}) }
	}
	return []Case{
		{"crash: the source's DEL stopped at any step of the hand-over, retried without its key, leaves the target the sole owner", func(t *testing.T, s Subject, caps Caps) {
			crashAt(t, s, caps, func(step int) netip.Addr { return migrating(t, s, step) }, delSource(s), func(step int, ip netip.Addr) {
				for range 2 { // retried: any number of times
					mustDel(t, s, call(pod("a", step)))
				}
				owns(t, s, pod("b", step), ip)
				AssertCode(t, s.Check(call(pod("a", step)), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
				recordsSay(t, s, step, "b", "a")
				if got := mustAdd(t, s, vm("c", step, "m2"), target(t, "")); got != ip {
					t.Fatalf("step %d: the next migration's target got %s, want %s", step, got, ip)
				}
				done(t, s, step, "b", "c")
			})
		}},
		{"crash: the source's DEL stopped, then the target's DEL without its key: the address is held, named by neither", func(t *testing.T, s Subject, caps Caps) {
			crashAt(t, s, caps, func(step int) netip.Addr { return migrating(t, s, step) }, delSource(s), func(step int, ip netip.Addr) {
				mustDel(t, s, call(pod("b", step)))
				mustDel(t, s, call(pod("a", step)))
				notFree(t, s, ip)
				recordsSay(t, s, step, "", "a", "b")
				if got := mustAdd(t, s, vm("e", step, ""), target(t, "")); got != ip {
					t.Fatalf("step %d: the key got %s after both DELs, want %s", step, got, ip)
				}
				done(t, s, step, "e")
			})
		}},
		{"crash: GC after the source's DEL stopped finishes the hand-over", func(t *testing.T, s Subject, caps Caps) {
			crashAt(t, s, caps, func(step int) netip.Addr { return migrating(t, s, step) }, delSource(s), func(step int, ip netip.Addr) {
				mustGC(t, s, epoch, att(pod("b", step)))
				owns(t, s, pod("b", step), ip)
				recordsSay(t, s, step, "b", "a")
				done(t, s, step, "b")
			})
		}},
		{"crash: the target's DEL stopped at any step, retried without its key, leaves the source the sole owner", func(t *testing.T, s Subject, caps Caps) {
			crashAt(t, s, caps, func(step int) netip.Addr { return migrating(t, s, step) },
				func(step int, ip netip.Addr) error { return s.Del(vm("b", step, "m1"), []netip.Addr{ip}) },
				func(step int, ip netip.Addr) {
					mustDel(t, s, call(pod("b", step)))
					owns(t, s, pod("a", step), ip)
					AssertCode(t, s.Check(call(pod("b", step)), []netip.Addr{ip}), cnierr.CodeUnknownContainer)
					recordsSay(t, s, step, "a", "b")
					done(t, s, step, "a")
				})
		}},
		{"crash: a target's ADD stopped at any step, then its DEL without the key: the source the sole owner", func(t *testing.T, s Subject, caps Caps) {
			crashAt(t, s, caps, func(step int) netip.Addr { return mustAdd(t, s, vm("a", step, ""), target(t, "")) },
				func(step int, _ netip.Addr) error {
					_, err := s.Add(vm("b", step, "m1"), []alloc.Target{target(t, "")})
					return err
				},
				func(step int, ip netip.Addr) {
					mustDel(t, s, call(pod("b", step)))
					owns(t, s, pod("a", step), ip)
					recordsSay(t, s, step, "a", "b")
					done(t, s, step, "a")
				})
		}},
	}
}
