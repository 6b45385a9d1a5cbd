package dapools

import (
	"errors"
	"os"
	"slices"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// stores holds the locked state directories of one operation. They are
// always locked in sorted path order, so two operations that need several
// pools can never deadlock on each other; an ADD with a quota takes its
// tenant's lock before them (hostlocal.LockTenant).
type stores struct {
	disks  map[string]*hostlocal.Disk
	order  []string
	tenant *hostlocal.Lock // the tenant's lock, nil without a quota
	uid    int             // who the state must belong to (os.Geteuid)
}

// openStores locks dirs, after the lock of tenant ("" none: an ADD with
// a quota's), kept in poolsDir, whose records the disks then write.
func openStores(poolsDir, tenant string, dirs []string, timeout time.Duration, faults *hostlocal.Faults) (*stores, error) {
	order := slices.Clone(dirs)
	slices.Sort(order)
	order = slices.Compact(order)
	s := &stores{disks: make(map[string]*hostlocal.Disk, len(order)), order: order, uid: os.Geteuid()}
	checked := map[string]bool{} // the pools' shared parent and index, once
	if tenant != "" {
		lk, err := hostlocal.LockTenant(poolsDir, tenant, s.uid, timeout, checked)
		if err != nil {
			return nil, err
		}
		s.tenant = lk
	}
	for _, dir := range order {
		d, err := hostlocal.OpenChecked(dir, timeout, checked)
		if err != nil {
			_ = s.close()
			return nil, err
		}
		d.SetFaults(faults)
		d.ForTenant(tenant)
		s.disks[dir] = d
	}
	return s, nil
}

// close commits every index and unlocks, in reverse order.
func (s *stores) close() error {
	var errs []error
	for i := len(s.order) - 1; i >= 0; i-- {
		if d := s.disks[s.order[i]]; d != nil {
			errs = append(errs, d.Close())
		}
	}
	if s.tenant != nil {
		errs = append(errs, s.tenant.Close())
		s.tenant = nil
	}
	return errors.Join(errs...)
}

// closeLogged closes after an operation whose reservations are already on
// disk: a failed index commit only costs the next operation a rebuild, so
// it is logged rather than failing this one.
func (s *stores) closeLogged(log *logging.Logger) {
	if err := s.close(); err != nil {
		log.Warn("index not committed; it will be rebuilt", logging.Error(err))
	}
}

// pools is stores as the engine's ADD and DEL read them, by scope.
type pools struct {
	*stores
	c *config
}

// lock locks the state directories of scopes, after the lock of tenant
// ("" none).
func (c *config) lock(tenant string, scopes []alloc.Scope) (pools, error) {
	st, err := openStores(PoolsDir(c.dataDir), tenant, c.dirs(scopes), c.lockTimeout, c.faults)
	return pools{st, c}, err
}

func (p pools) Pool(s alloc.Scope) alloc.LockedPool {
	if d := p.disks[p.c.dir(s)]; d != nil {
		return d
	}
	return nil
}

// TenantAddrs counts the scopes this ADD locked under their lock, the
// others without (hostlocal.TenantAddrsUnlocked, which the tenant's lock
// makes safe but may count too many).
func (p pools) TenantAddrs(tenant string, scopes []alloc.Scope) (n int, exact bool, err error) {
	exact = true
	for _, s := range scopes {
		var c int
		if d := p.disks[p.c.dir(s)]; d != nil {
			c, err = d.TenantAddrs(tenant)
		} else {
			c, err = hostlocal.TenantAddrsUnlocked(p.c.dir(s), tenant, p.uid)
			exact = false
		}
		if err != nil {
			return 0, false, err
		}
		n += c
	}
	return n, exact, nil
}
