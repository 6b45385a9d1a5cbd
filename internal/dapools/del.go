package dapools

import (
	"errors"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdDel releases everything the attachment holds in the state directories
// this config touches. It needs no ranges (they may have changed since the
// ADD) and never fails for an attachment it does not know. prevResult's
// addresses are hints: DEL goes straight to their files.
func (k commands) cmdDel(req *plugin.Request) error {
	c, err := k.parse(req, false)
	if err != nil {
		return err
	}
	hints, err := ipamconf.PrevAddrs(req.Conf)
	if err != nil {
		return err
	}
	st, err := openStores("", "", c.dirs(c.Scopes()), c.lockTimeout, c.faults)
	if err != nil {
		return err
	}
	att := c.attachment(req)
	now := req.Now
	var errs []error
	for _, dir := range st.order {
		held, err := alloc.HoldOnDel(st.disks[dir], att, c.keyed.Key, now)
		if err != nil {
			// Releasing the rest would free what the key holds.
			errs = append(errs, err)
			continue
		}
		if len(held) > 0 {
			req.Log.Debug("held for the sticky key", logging.String("dir", dir), logging.Any("addresses", held))
		}
		released, err := alloc.Release(st.disks[dir], att, hints)
		errs = append(errs, err)
		req.Log.Debug("released", logging.String("dir", dir), logging.Any("addresses", released))
	}
	var heads []alloc.SpillRecorder // where a chain starts: a DEL without one looks for no record
	for _, p := range c.Pools {
		if len(p.OverflowPools) > 0 {
			heads = append(heads, st.disks[c.dir(alloc.Scope{Pool: p.Name})])
		}
	}
	err = alloc.ForgetSpills(heads, att, errors.Join(errs...))
	st.closeLogged(req.Log)
	return err
}
