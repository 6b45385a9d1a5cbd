package dapools_test

import (
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// ipam-da-pools under the engine's contract: every row through its own
// CNI commands, in-process, over a fresh data dir, and the operators'
// releases through `cniplugins release`'s code.
func TestStoreContract(t *testing.T) {
	alloctest.RunStoreContract(t, alloctest.Caps{Cursor: true, Migration: true}, func(t *testing.T) alloctest.Subject {
		c := &diskCrash{dataDir: t.TempDir()}
		return alloctest.WithCrashes(alloctest.CNI{Command: c.command, Operators: localOperators{dataDir: c.dataDir}}, c)
	})
}

// diskCrash stops the next command after its first steps (writes) when
// armed: that command runs over hostlocal.Faults.
type diskCrash struct {
	dataDir string
	armed   bool
	steps   int
}

func (c *diskCrash) command() (plugin.Personality, map[string]any) {
	var f *hostlocal.Faults
	if c.armed {
		c.armed, f = false, &hostlocal.Faults{After: c.steps}
	}
	return dapools.Personality(f), map[string]any{"dataDir": c.dataDir, "lockTimeout": "5s"}
}

func (c *diskCrash) CrashAfter(n int) { c.armed, c.steps = true, n }

// Holds are every pool's hold records as written.
func (c *diskCrash) Holds() ([]alloc.Hold, error) {
	var out []alloc.Hold
	for _, s := range alloctest.Scopes {
		dir := dapools.ScopeDir(c.dataDir, alloc.Scope{Pool: s.Pool})
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		r := hostlocal.Reader(dir)
		ids, err := r.HoldIDs()
		for i := 0; err == nil && i < len(ids); i++ {
			var h *alloc.Hold
			if h, err = r.ReadHold(ids[i]); h != nil {
				out = append(out, *h)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// localOperators is `cniplugins release` over a data dir, at the
// contract's times.
type localOperators struct{ dataDir string }

func (o localOperators) local(now time.Time) ops.Local {
	return ops.Local{DataDir: o.dataDir, LockTimeout: 5 * time.Second, Now: func() time.Time { return now }}
}

func (o localOperators) ReleaseAddr(ip netip.Addr, now time.Time) error {
	_, err := ops.Release(o.local(now), ops.ReleaseRequest{Location: ops.Location{Pool: alloctest.ScopeOf(ip).Pool}, ReleaseRequest: alloc.ReleaseRequest{Addr: ip}})
	return err
}

// ReleaseKey releases the key's holds in every pool that has a state
// directory, as an operator would run it pool by pool (alloctest.ReleaseKeyIn).
func (o localOperators) ReleaseKey(key, ifname string, now time.Time) error {
	var pools []alloc.Scope
	for _, s := range alloctest.Scopes {
		if _, err := os.Stat(dapools.ScopeDir(o.dataDir, s)); err == nil {
			pools = append(pools, s)
		}
	}
	return alloctest.ReleaseKeyIn(pools, func(s alloc.Scope) error {
		_, err := ops.Release(o.local(now), ops.ReleaseRequest{Location: ops.Location{Pool: s.Pool}, ReleaseRequest: alloc.ReleaseRequest{Key: key, IfName: ifname}})
		return err
	})
}
