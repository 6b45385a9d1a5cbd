package alloctest

import (
	"errors"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// memSubject is the in-memory allocator as the contract drives it: its
// own commands through CNI, over one MemPools for the subject's life;
// the operators' releases through the engine's (alloc.OperatorRelease,
// as `cniplugins release` runs it in a state directory); and a command
// crashed part-way by Faults when armed.
type memSubject struct {
	pools *MemPools
	armed bool
	steps int
}

// NewMemSubject is a fresh in-memory allocator under the store contract.
func NewMemSubject() Crashable {
	m := &memSubject{pools: NewMemPools()}
	return WithCrashes(CNI{Command: m.command, Operators: m}, m)
}

func (m *memSubject) command() (plugin.Personality, map[string]any) {
	var f *Faults
	if m.armed {
		m.armed, f = false, &Faults{After: m.steps}
	}
	return m.pools.Personality(f), nil
}

// CrashAfter implements Crasher.
func (m *memSubject) CrashAfter(n int) { m.armed, m.steps = true, n }

// Holds implements Crasher: every scope's records as kept.
func (m *memSubject) Holds() ([]alloc.Hold, error) {
	var out []alloc.Hold
	for _, st := range m.pools.stores {
		for _, id := range slices.Sorted(maps.Keys(st.holds)) {
			out = append(out, st.holds[id])
		}
	}
	return out, nil
}

// release is an operator's release r in scope s, at now.
func (m *memSubject) release(s alloc.Scope, r alloc.ReleaseRequest, now time.Time) error {
	r.Where = s.Path()
	_, _, err := alloc.OperatorRelease(m.pools.store(s, "", nil), r, now)
	return err
}

// ReleaseAddr implements Operators in ip's pool.
func (m *memSubject) ReleaseAddr(ip netip.Addr, now time.Time) error {
	return m.release(ScopeOf(ip), alloc.ReleaseRequest{Addr: ip}, now)
}

// ReleaseKey implements Operators in every pool that has state.
func (m *memSubject) ReleaseKey(key, ifname string, now time.Time) error {
	var pools []alloc.Scope
	for _, s := range Scopes {
		if m.pools.stores[s] != nil {
			pools = append(pools, s)
		}
	}
	return ReleaseKeyIn(pools, func(s alloc.Scope) error {
		return m.release(s, alloc.ReleaseRequest{Key: key, IfName: ifname}, now)
	})
}

// ReleaseKeyIn is an operator's release of a key's holds as run pool by
// pool over pools (those that have state), by release: done when one
// pool released something, else the first pool's refusal.
func ReleaseKeyIn(pools []alloc.Scope, release func(alloc.Scope) error) error {
	if len(pools) == 0 {
		return errors.New("no pool has state")
	}
	var first error
	for i, s := range pools {
		err := release(s)
		if err == nil {
			return nil
		}
		if i == 0 {
			first = err
		}
	}
	return first
}
