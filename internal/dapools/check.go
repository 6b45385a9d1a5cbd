package dapools

import (
	"errors"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// Check verifies that every address in prevResult is reserved for this
// attachment in the range set or pool it belongs to; without addresses in
// prevResult, the engine's rule (alloc.CheckHeld) over what it holds.
func (c *config) Check(addrs []netip.Addr, targets []alloc.Target) error {
	att := c.att
	held := func(scopes []alloc.Scope) (map[alloc.Scope][]netip.Addr, error) {
		out := map[alloc.Scope][]netip.Addr{}
		return out, c.read(scopes, func(s alloc.Scope, d *hostlocal.Disk) (err error) {
			if d != nil {
				out[s], err = alloc.Held(d, att)
			}
			return err
		})
	}
	return alloc.CheckPrev(addrs, targets, att, held, func(addrs []netip.Addr, placed []alloc.Target) error {
		in := map[alloc.Scope][]netip.Addr{}
		for i, a := range addrs {
			in[placed[i].Scope] = append(in[placed[i].Scope], a)
		}
		return c.read(slices.Collect(maps.Keys(in)), func(s alloc.Scope, d *hostlocal.Disk) error {
			var l alloc.HoldReader = hostlocal.Reader(c.dir(s)) // not there: it holds nothing
			if d != nil {
				l = d
			}
			return alloc.Check(l, att, in[s])
		})
	})
}

// read runs fn on each of scopes' state directories in path order, all
// under their locks; CHECK only reads, so it creates no state directory
// (Open would), and fn gets nil for one that is not there.
func (c *config) read(scopes []alloc.Scope, fn func(alloc.Scope, *hostlocal.Disk) error) error {
	st, err := c.lock("", slices.DeleteFunc(slices.Clone(scopes), func(s alloc.Scope) bool {
		_, err := os.Lstat(c.dir(s))
		return errors.Is(err, fs.ErrNotExist)
	}))
	if err != nil {
		return err
	}
	defer st.close()
	for _, s := range inPathOrder(c.DataDir, scopes) {
		if err := fn(s, st.disks[s]); err != nil {
			return err
		}
	}
	return nil
}
