package hostlocal

import (
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Tenants' lock files (docs/tenancy.md, "Tenants that come and go"). A
// remover unlinks a lock file only while it holds that very flock (taken
// without waiting) and, under it, finds the tenant's count 0 in every
// pool; a locker (LockTenant) keeps only a flock on the inode the path
// names. So whoever holds a lock the path names is the tenant's only
// holder, whenever the file goes: counts only grow under the tenant's
// lock, so the remover's 0 stays 0 until the file is gone.

// tenantLockPrefix names a tenant's lock in the pools' _index directory,
// where no pool's index can take the name (pool names start with a
// letter or digit).
const tenantLockPrefix = "_tenant-"

// LockTenant takes tenant's lock, kept in poolsDir (the parent of the
// pools' state directories), within timeout, until it is closed. Every
// ADD with a quota takes it before any pool's lock (nothing waits for it
// holding a pool's: no deadlock), so no other process adds to the
// tenant's count meanwhile and the ADD may count in pools it has not
// locked (TenantAddrsUnlocked). GC and fsck --repair remove idle tenants'
// lock files (DropIdleTenantLocks): a flock on an inode the path no
// longer names locks nothing anyone else will look at, so once locked it
// checks that the path still names the inode it locked, and otherwise
// locks again, within the one timeout. checked is OpenChecked's.
func LockTenant(poolsDir, tenant string, uid int, timeout time.Duration, checked map[string]bool) (*Lock, error) {
	idx := child(poolsDir, "_index")
	if err := ensureChecked(checked, uid, dirSpec{poolsDir, modeStateDir}, dirSpec{idx, modePrivateDir}); err != nil {
		return nil, err
	}
	path := child(idx, tenantLockPrefix+pool.TenantName(tenant))
	busy := func() error {
		return cnierr.New(cnierr.CodeTryAgainLater, "tenant is locked", "tenant=%s timeout=%s", tenant, timeout)
	}
	deadline := time.Now().Add(timeout)
	for {
		l, err := lockFile(path, syscall.O_CREAT, uid, time.Until(deadline), busy)
		if err != nil {
			return nil, err
		}
		named, err := l.names(path)
		if err == nil && named {
			return l, nil
		}
		l.Close()
		if err != nil {
			return nil, err
		}
		if !time.Now().Before(deadline) {
			return nil, busy()
		}
	}
}

// TenantLock is one tenant's lock file in a data dir's pools.
type TenantLock struct {
	Path   string
	Tenant string // decoded
	// Counted: some pool counts addresses for the tenant (its lock is no
	// leftover).
	Counted bool
	pools   []string // the pools' state directories that were asked
}

// TenantLocks lists the tenants' lock files under poolsDir (the parent of
// the pools' state directories), judged without any lock: what fsck
// reports.
func TenantLocks(poolsDir string, uid int) ([]TenantLock, error) {
	idx := child(poolsDir, "_index")
	des, err := readDirIfAny(idx, uid)
	if err != nil {
		return nil, err
	}
	dirs, err := readDirIfAny(poolsDir, uid)
	if err != nil {
		return nil, err
	}
	pools := StateDirNames(dirs)
	for i, name := range pools {
		pools[i] = child(poolsDir, name)
	}
	var out []TenantLock
	for _, de := range des {
		name, ok := strings.CutPrefix(de.Name(), tenantLockPrefix)
		tenant, valid := tenantOf(name)
		if !ok || !valid {
			continue
		}
		l := TenantLock{Path: child(idx, de.Name()), Tenant: tenant, pools: pools}
		if l.Counted, err = counted(pools, l.Tenant, uid); err != nil {
			return out, err
		}
		out = append(out, l)
	}
	return out, nil
}

// DropIdleTenantLocks removes the lock file of every tenant under
// poolsDir that no pool counts anything for and no process holds (see
// above). It returns what it did.
func DropIdleTenantLocks(poolsDir string, uid int) ([]string, error) {
	locks, err := TenantLocks(poolsDir, uid)
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, l := range locks {
		removed, err := dropTenantLock(l, uid)
		errs = append(errs, err)
		if removed && err == nil {
			done = append(done, "removed "+l.Path+" (no pool counts an address for its tenant)")
		}
	}
	return done, errors.Join(errs...)
}

// dropTenantLock unlinks l's file while holding its lock, if no pool
// counts an address for its tenant, before and then; false when it left
// it (counted, held by another process, replaced or gone meanwhile).
func dropTenantLock(l TenantLock, uid int) (bool, error) {
	if l.Counted {
		return false, nil
	}
	// Never created here, never waited for: a held lock is a tenant in use.
	lk, err := lockFile(l.Path, 0, uid, 0, func() error { return errLockHeld })
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, errLockHeld) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer lk.Close()
	if named, err := lk.names(l.Path); err != nil || !named {
		return false, err
	}
	if c, err := counted(l.pools, l.Tenant, uid); err != nil || c {
		return false, err
	}
	return true, removeIfAny(l.Path)
}

// names reports whether path names the inode l locked.
func (l *Lock) names(path string) (bool, error) {
	var held, named syscall.Stat_t
	if err := syscall.Fstat(l.fd, &held); err != nil {
		return false, cnierr.IO("stat", path, err)
	}
	if err := syscall.Lstat(path, &named); err != nil {
		if err == syscall.ENOENT {
			return false, nil
		}
		return false, cnierr.IO("stat", path, err)
	}
	return held.Dev == named.Dev && held.Ino == named.Ino, nil
}

// errLockHeld is lockFile's busy error for a lock another process holds.
var errLockHeld = errors.New("lock held")

// counted reports whether any of the pools' state directories counts an
// address for tenant.
func counted(pools []string, tenant string, uid int) (bool, error) {
	for _, dir := range pools {
		n, err := TenantAddrsUnlocked(dir, tenant, uid)
		if err != nil || n > 0 {
			return n > 0, err
		}
	}
	return false, nil
}

// StateDirNames is the sorted names of the state directories among a
// data dir's (or its pools directory's) entries: names that start with
// '_' or '.' are the store's own (indexes, scratch), not a network's or
// a pool's.
func StateDirNames(des []os.DirEntry) []string {
	var out []string
	for _, de := range des {
		if de.IsDir() && !strings.HasPrefix(de.Name(), "_") && !strings.HasPrefix(de.Name(), ".") {
			out = append(out, de.Name())
		}
	}
	slices.Sort(out)
	return out
}
