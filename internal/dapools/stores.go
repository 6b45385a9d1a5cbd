package dapools

import (
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// stores holds the locked state directories of one operation, by scope,
// as the engine's ADD and DEL read them. They are always locked in sorted
// path order, so two operations that need several pools can never
// deadlock on each other; an ADD with a quota takes its tenant's lock
// before them (hostlocal.LockTenant).
type stores struct {
	Place
	disks  map[alloc.Scope]*hostlocal.Disk
	order  []alloc.Scope   // inPathOrder
	tenant *hostlocal.Lock // the tenant's lock, nil without a quota
	uid    int             // who the state must belong to (os.Geteuid)
}

// inPathOrder is scopes once each, sorted by the path of their state
// directories under dataDir: the order every operation locks them in.
func inPathOrder(dataDir string, scopes []alloc.Scope) []alloc.Scope {
	out := slices.Clone(scopes)
	slices.SortFunc(out, func(a, b alloc.Scope) int { return strings.Compare(ScopeDir(dataDir, a), ScopeDir(dataDir, b)) })
	return slices.Compact(out)
}

// Place is a data dir as everything that locks its state directories
// sees it (the personality's commands and every GC): where it is, how
// long to wait for a lock and, in the store contract only, faults that
// may stop the writes.
type Place struct {
	DataDir     string
	LockTimeout time.Duration
	Faults      *hostlocal.Faults
}

func (p Place) dir(s alloc.Scope) string { return ScopeDir(p.DataDir, s) }

// lock locks the state directories of scopes, after the lock of tenant
// ("" none: an ADD with a quota's), whose records the disks then write.
func (p Place) lock(tenant string, scopes []alloc.Scope) (*stores, error) {
	order := inPathOrder(p.DataDir, scopes)
	s := &stores{Place: p, disks: make(map[alloc.Scope]*hostlocal.Disk, len(order)), order: order, uid: os.Geteuid()}
	checked := map[string]bool{} // the pools' shared parent and index, once
	if tenant != "" {
		lk, err := hostlocal.LockTenant(PoolsDir(p.DataDir), tenant, s.uid, p.LockTimeout, checked)
		if err != nil {
			return nil, err
		}
		s.tenant = lk
	}
	for _, sc := range order {
		d, err := hostlocal.OpenChecked(p.dir(sc), p.LockTimeout, checked)
		if err != nil {
			_ = s.close()
			return nil, err
		}
		d.SetFaults(p.Faults)
		d.ForTenant(tenant)
		s.disks[sc] = d
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

// Pool is sc's locked directory; a scope not locked (CHECK locks no
// directory that is not there) has none: a nil interface, which a nil
// *hostlocal.Disk would not be.
func (s *stores) Pool(sc alloc.Scope) alloc.LockedPool {
	if d := s.disks[sc]; d != nil {
		return d
	}
	return nil
}

// TenantAddrs counts the scopes this ADD locked under their lock, the
// others without (hostlocal.TenantAddrsUnlocked, which the tenant's lock
// makes safe but may count too many).
func (s *stores) TenantAddrs(tenant string, scopes []alloc.Scope) (n int, exact bool, err error) {
	exact = true
	for _, sc := range scopes {
		var c int
		if d := s.disks[sc]; d != nil {
			c, err = d.TenantAddrs(tenant)
		} else {
			c, err = hostlocal.TenantAddrsUnlocked(s.dir(sc), tenant, s.uid)
			exact = false
		}
		if err != nil {
			return 0, false, err
		}
		n += c
	}
	return n, exact, nil
}
