package dapools

import (
	"errors"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdGC releases every reservation of this network whose attachment the
// runtime no longer lists (alloc.KeepSet has the rules). It keeps going
// after errors.
func cmdGC(req *plugin.Request) error {
	c, err := parseConfig(req.Conf, req.CNIArgs, false)
	if err != nil {
		return err
	}
	live, err := alloc.ValidAttachments(req.Conf)
	if err != nil {
		return err
	}
	keep := alloc.NewKeepSet(c.Network, live).Keeps
	st, err := openStores(c.dirs(), c.lockTimeout)
	if err != nil {
		return err
	}
	now := time.Now()
	var errs []error
	for _, dir := range st.order {
		freed, held, err := alloc.GCHolds(st.disks[dir], keep, now)
		errs = append(errs, err)
		if len(freed)+len(held) > 0 {
			req.Log.Info("gc of sticky holds", logging.String("dir", dir), logging.Any("expired", freed), logging.Any("held", held))
		}
		if err != nil {
			continue // alloc.GC would free what failed to become a hold
		}
		released, err := alloc.GC(st.disks[dir], keep)
		errs = append(errs, err)
		if len(released) > 0 {
			req.Log.Info("gc released", logging.String("dir", dir), logging.Any("addresses", released))
		}
		gone, err := st.disks[dir].GCSpills(keep)
		errs = append(errs, err)
		if len(gone) > 0 {
			req.Log.Info("gc of spill records", logging.String("dir", dir), logging.Any("done", gone))
		}
		// Tenant records a killed ADD or DEL left over-count their tenant.
		fixed, err := st.disks[dir].RepairTenants()
		errs = append(errs, err)
		if len(fixed) > 0 {
			req.Log.Info("gc of tenant records", logging.String("dir", dir), logging.Any("done", fixed))
		}
	}
	errs = append(errs, st.close())
	// After the pools' locks: a tenant's lock is never waited for while
	// holding a pool's (it is not waited for here either).
	dropped, err := hostlocal.DropIdleTenantLocks(PoolsDir(c.dataDir), st.uid)
	errs = append(errs, err)
	if len(dropped) > 0 {
		req.Log.Info("gc of tenant locks", logging.Any("done", dropped))
	}
	return errors.Join(errs...)
}
