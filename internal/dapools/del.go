package dapools

import (
	"errors"
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdDel releases everything the attachment holds in the state directories
// this config touches. It needs no ranges (they may have changed since the
// ADD) and never fails for an attachment it does not know.
func cmdDel(req *plugin.Request) error {
	c, err := parseConfig(req.Conf, req.CNIArgs, false)
	if err != nil {
		return err
	}
	hints, err := prevAddrs(req)
	if err != nil {
		return err
	}
	st, err := openStores(c.dirs(), c.lockTimeout)
	if err != nil {
		return err
	}
	att := c.attachment(req)
	var errs []error
	for _, dir := range st.order {
		released, err := st.allocator(dir).Release(att, hints)
		errs = append(errs, err)
		req.Log.Debug("released", logging.String("dir", dir), logging.Any("addresses", released))
	}
	st.closeLogged(req.Log)
	return errors.Join(errs...)
}

// prevAddrs are prevResult's addresses: DEL goes straight to their files.
func prevAddrs(req *plugin.Request) ([]netip.Addr, error) { return PrevAddrs(req.Conf) }
