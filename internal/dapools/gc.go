package dapools

import (
	"errors"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// GC releases every reservation of this network whose attachment the
// runtime no longer lists (alloc.KeepSet has the rules), through Collect.
func (c *config) GC(valid []alloc.Attachment) error {
	_, _, err := Collect(Collection{Place: c.Place, Scopes: c.Scopes(), Keep: alloc.NewKeepSet(c.Network, valid).Keeps, Now: c.req.Now, Log: c.req.Log})
	return err
}

// Collection is one GC of state directories under a data dir.
type Collection struct {
	Place
	Scopes []alloc.Scope
	Keep   func(alloc.Attachment) bool
	Now    time.Time
	Log    *logging.Logger // nil logs nothing
	// Inspect, when set, sees each directory under its lock before the
	// GC changes anything there (what `cniplugins gc` reports with).
	Inspect func(alloc.Scope) error
}

// Collect is every GC of local state: the CNI GC command's and the
// operators' `cniplugins gc --apply`, one orchestration so that what a GC
// repairs cannot differ between them again (the operators' once left the
// tenant records alone). In each directory, under its lock: the engine's
// GC (alloc.CollectGC: hold records and reservations), then its end of
// the spill records of attachments not kept (alloc.GCSpills), and the
// tenant records a killed ADD or DEL left; then, after the directories'
// locks, the lock files of idle tenants. It keeps going after errors and
// returns them joined, with what it released in all of them, as
// alloc.CollectGC returns it: the addresses it freed (expired holds first),
// and those whose owner it released to a hold or to a migration target.
func Collect(g Collection) (freed, held []netip.Addr, err error) {
	st, err := g.lock("", g.Scopes)
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, s := range st.order {
		d, dir := st.disks[s], g.dir(s)
		if g.Inspect != nil {
			if err := g.Inspect(s); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		f, h, err := alloc.CollectGC(d, g.Keep, g.Now)
		errs = append(errs, err)
		logDone(g.Log, "gc made sticky holds", dir, "addresses", h)
		logDone(g.Log, "gc released", dir, "addresses", f)
		freed, held = append(freed, f...), append(held, h...)
		gone, err := alloc.GCSpills(d, g.Keep)
		errs = append(errs, err)
		logDone(g.Log, "gc of spill records", dir, "removed", gone)
		// Tenant records a killed ADD or DEL left over-count their tenant.
		fixed, err := d.RepairTenants()
		errs = append(errs, err)
		logDone(g.Log, "gc of tenant records", dir, "done", fixed)
	}
	errs = append(errs, st.close())
	// After the pools' locks: a tenant's lock is never waited for while
	// holding a pool's (it is not waited for here either).
	dropped, err := hostlocal.DropIdleTenantLocks(PoolsDir(g.DataDir), st.uid)
	logDone(g.Log, "gc of tenant locks", PoolsDir(g.DataDir), "done", dropped)
	return freed, held, errors.Join(append(errs, err)...)
}

// logDone logs what a step of GC did in dir, if it did anything.
func logDone[T any](log *logging.Logger, msg, dir, key string, done []T) {
	if len(done) > 0 {
		log.Info(msg, logging.String("dir", dir), logging.Any(key, done))
	}
}
