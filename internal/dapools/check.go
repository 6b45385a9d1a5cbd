package dapools

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strings"

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
	return alloc.CheckPrev(req.Conf, targets, func() error { return checkOwnsAny(req, c, targets) },
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
// state directory the config allocates from (standalone: the network's),
// in one of each overflow chain's.
func checkOwnsAny(req *plugin.Request, c *config, targets []alloc.Target) error {
	att := c.attachment(req)
	var groups [][]string // each target's chain's directories; one must own an address
	for _, t := range targets {
		var g []string
		for _, ch := range t.Chain() {
			g = append(g, c.dir(ch.Scope))
		}
		if !slices.ContainsFunc(groups, func(h []string) bool { return slices.Equal(g, h) }) {
			groups = append(groups, g)
		}
	}
	// CHECK only reads: a directory not there yet is not created.
	var existing []string
	for _, dir := range c.dirs() {
		if requireStateDirs([]string{dir}, att) == nil {
			existing = append(existing, dir)
		}
	}
	st, err := openStores(existing, c.lockTimeout)
	if err != nil {
		return err
	}
	defer st.close()
	for _, g := range groups {
		owns := false
		for _, dir := range g {
			d := st.disks[dir]
			if d == nil {
				continue
			}
			ok, err := alloc.OwnsAny(d, att)
			if err != nil {
				return err
			}
			owns = owns || ok
		}
		if !owns {
			return cnierr.New(cnierr.CodeUnknownContainer, "attachment holds no address", "dir=%s containerID=%s ifname=%s", strings.Join(g, " or "), att.ContainerID, att.IfName)
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
