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
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdCheck verifies that every address in prevResult is reserved for this
// attachment in the range set or pool it belongs to; without addresses in
// prevResult, the engine's rule (alloc.CheckHeld) over what it holds.
func (k commands) cmdCheck(req *plugin.Request) error {
	c, targets, err := k.load(req)
	if err != nil {
		return err
	}
	addrs, err := ipamconf.PrevAddrs(req.Conf)
	if err != nil {
		return err
	}
	att := c.attachment(req)
	return alloc.CheckPrev(addrs, targets, att, func(scopes []alloc.Scope) (map[alloc.Scope][]netip.Addr, error) { return held(c, att, scopes) },
		func(addrs []netip.Addr, placed []alloc.Target) error { return checkAddrs(req, c, addrs, placed) })
}

// checkAddrs verifies each address in the state directory of its target.
func checkAddrs(req *plugin.Request, c *config, addrs []netip.Addr, placed []alloc.Target) error {
	perDir := map[string][]netip.Addr{}
	for i, a := range addrs {
		dir := c.dir(placed[i].Scope)
		perDir[dir] = append(perDir[dir], a)
	}
	st, err := openStores(existing(slices.Collect(maps.Keys(perDir))), c.lockTimeout, c.faults)
	if err != nil {
		return err
	}
	defer st.close()
	att := c.attachment(req)
	for _, dir := range slices.Sorted(maps.Keys(perDir)) {
		var l alloc.HoldReader = hostlocal.Reader(dir) // not there: it holds nothing
		if d := st.disks[dir]; d != nil {
			l = d
		}
		if err := alloc.Check(l, att, perDir[dir]); err != nil {
			return err
		}
	}
	return nil
}

// held is what att holds in each scope's state directory, read under its
// lock.
func held(c *config, att alloc.Attachment, scopes []alloc.Scope) (map[alloc.Scope][]netip.Addr, error) {
	var dirs []string
	for _, s := range scopes {
		dirs = append(dirs, c.dir(s))
	}
	st, err := openStores(existing(dirs), c.lockTimeout, c.faults)
	if err != nil {
		return nil, err
	}
	defer st.close()
	out := map[alloc.Scope][]netip.Addr{}
	for _, s := range scopes {
		if d := st.disks[c.dir(s)]; d != nil {
			if out[s], err = alloc.Held(d, att); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// existing is those of dirs that exist: CHECK only reads, so it creates
// no state directory (Open would), and one that is not there holds
// nothing.
func existing(dirs []string) []string {
	return slices.DeleteFunc(dirs, func(dir string) bool {
		_, err := os.Lstat(dir)
		return errors.Is(err, fs.ErrNotExist)
	})
}
