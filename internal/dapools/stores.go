package dapools

import (
	"errors"
	"os"
	"slices"
	"time"

	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/pool"
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

func openStores(dirs []string, timeout time.Duration, faults *hostlocal.Faults) (*stores, error) {
	return openStoresAs("", "", dirs, timeout, faults)
}

// openStoresAs is openStores for an ADD of tenant's (a quota's; "" none),
// whose lock, kept in poolsDir, it takes first.
func openStoresAs(poolsDir, tenant string, dirs []string, timeout time.Duration, faults *hostlocal.Faults) (*stores, error) {
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

// tenantAddrs is q's tenant's addresses across dirs (the selection's
// pools and their chains): those this operation locked counted under
// their lock, the others without (hostlocal.TenantAddrsUnlocked, which
// the tenant's lock makes safe but may count too many). exact says
// whether every count was locked.
func (s *stores) tenantAddrs(q *pool.Quota, dirs []string) (n int, exact bool, err error) {
	exact = true
	for _, dir := range dirs {
		var c int
		if d, ok := s.disks[dir]; ok {
			c, err = d.TenantAddrs(q.Tenant)
		} else {
			c, err = hostlocal.TenantAddrsUnlocked(dir, q.Tenant, s.uid)
			exact = false
		}
		if err != nil {
			return 0, false, err
		}
		n += c
	}
	return n, exact, nil
}
