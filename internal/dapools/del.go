package dapools

import (
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdDel runs the engine's DEL (alloc.Config.DelLocked) over the state
// directories this config touches. It never fails for an attachment it
// does not know; prevResult's addresses are hints that send it straight
// to their files.
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
	err = c.DelLocked(pools{st, c}, c.attachment(req), c.keyed.Key, hints, req.Now, req.Log)
	st.closeLogged(req.Log)
	return err
}
