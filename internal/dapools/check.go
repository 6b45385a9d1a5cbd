package dapools

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
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
	addrs, err := prevAddrs(req)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return checkHoldsAny(req, c)
	}
	perDir := map[string][]netip.Addr{}
	for _, a := range addrs {
		t, ok := targetFor(targets, a)
		if !ok {
			return cnierr.New(cnierr.CodeUnknownContainer, "address is in no selected range set", "address=%s", a)
		}
		perDir[t.dir] = append(perDir[t.dir], a)
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
		if err := st.allocator(dir).Check(att, perDir[dir]); err != nil {
			return err
		}
	}
	return nil
}

// checkHoldsAny is host-local's CHECK, for a runtime that sends no
// addresses to verify: the attachment must hold some address in every
// state directory the config allocates from (standalone: the network's).
func checkHoldsAny(req *plugin.Request, c *config) error {
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
		ok, err := st.allocator(dir).HoldsAny(att)
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
func requireStateDirs(dirs []string, a hostlocal.Attachment) error {
	for _, dir := range dirs {
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return cnierr.New(cnierr.CodeUnknownContainer, "attachment holds no address", "dir=%s (none yet) containerID=%s ifname=%s", dir, a.ContainerID, a.IfName)
		}
	}
	return nil
}

func targetFor(targets []target, a netip.Addr) (target, bool) {
	for _, t := range targets {
		if t.set.Contains(a) {
			return t, true
		}
	}
	return target{}, false
}
