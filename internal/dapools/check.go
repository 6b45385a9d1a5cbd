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
// prevResult, that the attachment holds one (host-local's CHECK).
func cmdCheck(req *plugin.Request) error {
	c, targets, err := load(req)
	if err != nil {
		return err
	}
	return alloc.CheckPrev(req.Conf, targets, func() error { return checkOwnsAny(req, c) },
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
	st, err := openStores(dirs, c.lockTimeout)
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

// checkOwnsAny is host-local's CHECK, for a runtime that sends no
// addresses to verify: the attachment must hold some address in every
// state directory the config allocates from (standalone: the network's).
func checkOwnsAny(req *plugin.Request, c *config) error {
	if err := requireStateDirs(c.dirs(), c.attachment(req)); err != nil {
		return err
	}
	st, err := openStores(c.dirs(), c.lockTimeout)
	if err != nil {
		return err
	}
	defer st.close()
	att := c.attachment(req)
	for _, dir := range st.order {
		ok, err := alloc.OwnsAny(st.disks[dir], att)
		if err != nil {
			return err
		}
		if !ok {
			return cnierr.New(cnierr.CodeUnknownContainer, "attachment holds no address", "dir=%s containerID=%s ifname=%s", dir, att.ContainerID, att.IfName)
		}
	}
	return nil
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
