package dapools

import (
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdCheck verifies that every address in prevResult is reserved for this
// attachment in the range set or pool it belongs to.
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
		return cnierr.New(cnierr.CodeInvalidConfig, "CHECK needs prevResult with the addresses to verify", "prevResult.ips is empty")
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

func targetFor(targets []target, a netip.Addr) (target, bool) {
	for _, t := range targets {
		if t.set.Contains(a) {
			return t, true
		}
	}
	return target{}, false
}
