package dapools

import (
	"errors"
	"slices"
	"time"

	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// stores holds the locked state directories of one operation. They are
// always locked in sorted path order, so two operations that need several
// pools can never deadlock on each other.
type stores struct {
	disks map[string]*hostlocal.Disk
	order []string
}

func openStores(dirs []string, timeout time.Duration) (*stores, error) {
	order := slices.Clone(dirs)
	slices.Sort(order)
	order = slices.Compact(order)
	s := &stores{disks: make(map[string]*hostlocal.Disk, len(order)), order: order}
	checked := map[string]bool{} // the pools' shared parent and index, once
	for _, dir := range order {
		d, err := hostlocal.OpenChecked(dir, timeout, checked)
		if err != nil {
			_ = s.close()
			return nil, err
		}
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

// tenantAddrs is q's tenant's addresses across every state directory of
// the operation: the selection's pools and their chains, all locked.
func (s *stores) tenantAddrs(q *pool.Quota) (int, error) {
	n := 0
	for _, dir := range s.order {
		c, err := s.disks[dir].TenantAddrs(q.Tenant)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}
