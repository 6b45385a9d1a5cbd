package dapools

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
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
	att := c.attachment(req)
	return alloc.CheckPrev(req.Conf, targets, att, func(scopes []alloc.Scope) (map[alloc.Scope][]netip.Addr, error) { return held(c, att, scopes) },
		func(addrs []netip.Addr, placed []alloc.Target) error { return checkAddrs(req, c, addrs, placed) })
}

// checkAddrs verifies each address in the state directory of its target.
func checkAddrs(req *plugin.Request, c *config, addrs []netip.Addr, placed []alloc.Target) error {
	perDir := map[string][]netip.Addr{}
	for i, a := range addrs {
		dir := c.dir(placed[i].Scope)
		perDir[dir] = append(perDir[dir], a)
	}
	dirs := make([]string, 0, len(perDir))
	for dir := range perDir {
		dirs = append(dirs, dir)
	}
	if err := requireStateDirs(dirs, c.attachment(req)); err != nil {
		return err
	}
	st, err := openStores(dirs, c.lockTimeout, c.faults)
	if err != nil {
		return err
	}
	defer st.close()
	att := c.attachment(req)
	for _, dir := range st.order {
		if err := alloc.Check(st.disks[dir], att, perDir[dir]); err != nil {
			return err
		}
	}
	return nil
}

// held is what att holds in each scope's state directory, read under its
// lock. CHECK only reads: a directory not there yet is not created, and
// nothing is held there.
func held(c *config, att alloc.Attachment, scopes []alloc.Scope) (map[alloc.Scope][]netip.Addr, error) {
	var existing []string
	for _, s := range scopes {
		if requireStateDirs([]string{c.dir(s)}, att) == nil {
			existing = append(existing, c.dir(s))
		}
	}
	st, err := openStores(existing, c.lockTimeout, c.faults)
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

// requireStateDirs answers CHECK for a state directory that does not exist
// without creating it: CHECK only reads, and nothing can be held there.
func requireStateDirs(dirs []string, a alloc.Attachment) error {
	for _, dir := range dirs {
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return cnierr.New(cnierr.CodeUnknownContainer, "attachment holds no address", "dir=%s (none yet) containerID=%s ifname=%s", dir, a.ContainerID, a.IfName)
		}
	}
	return nil
}
