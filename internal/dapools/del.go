package dapools

import (
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdDel runs the engine's DEL (alloc.Config.LockedDel) over the state
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
	p, err := c.lock("", c.Scopes())
	if err != nil {
		return err
	}
	err = c.LockedDel(p, c.attachment(req), c.keyed.Key, hints, req.Now, req.Log)
	p.closeLogged(req.Log)
	return err
}
