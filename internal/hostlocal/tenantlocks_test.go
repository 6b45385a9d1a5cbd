package hostlocal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// tenantLockPath is tenant's lock file under poolsDir.
func tenantLockPath(poolsDir, tenant string) string {
	return filepath.Join(poolsDir, "_index", tenantLockPrefix+pool.TenantName(tenant))
}

// A locker whose flock lands on a lock file that a remover unlinked
// meanwhile locks the file the path names instead, so that it and the
// next locker exclude each other.
func TestLockTenantRetriesAfterUnlink(t *testing.T) {
	poolsDir, uid := t.TempDir(), os.Geteuid()
	path := tenantLockPath(poolsDir, "namespace=a")
	remover, err := LockTenant(poolsDir, "namespace=a", uid, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lock, 1)
	go func() {
		l, err := LockTenant(poolsDir, "namespace=a", uid, 5*time.Second, nil)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(50 * time.Millisecond) // the locker waits on the remover's inode
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	remover.Close()
	l := <-got
	if l == nil {
		t.FailNow()
	}
	defer l.Close()
	if named, err := l.names(path); err != nil || !named {
		t.Fatalf("the locker holds an inode %s does not name (%v)", path, err)
	}
	_, err = LockTenant(poolsDir, "namespace=a", uid, 50*time.Millisecond, nil)
	if cnierr.Code(err) != cnierr.CodeTryAgainLater {
		t.Fatalf("a second locker while the first holds the lock: %v, want 11", err)
	}
}

func TestDropIdleTenantLocks(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, poolsDir string) func() // returns a cleanup
		counted bool
		removed bool
	}{
		{"no pool has a token", nil, false, true},
		{"an unused token (no record links it)", func(t *testing.T, poolsDir string) func() {
			token(t, poolsDir, "p", 0)
			return func() {}
		}, false, true},
		{"a pool counts an address", func(t *testing.T, poolsDir string) func() {
			token(t, poolsDir, "p", 1)
			return func() {}
		}, true, false},
		{"another pool counts an address", func(t *testing.T, poolsDir string) func() {
			token(t, poolsDir, "p", 0)
			token(t, poolsDir, "q", 2)
			return func() {}
		}, true, false},
		{"held by an ADD", func(t *testing.T, poolsDir string) func() {
			l, err := LockTenant(poolsDir, "namespace=a", os.Geteuid(), time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			return func() { l.Close() }
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			poolsDir, uid := t.TempDir(), os.Geteuid()
			l, err := LockTenant(poolsDir, "namespace=a", uid, time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			if tt.setup != nil {
				defer tt.setup(t, poolsDir)()
			}
			locks, err := TenantLocks(poolsDir, uid)
			if err != nil || len(locks) != 1 || locks[0].Tenant != "namespace=a" || locks[0].Counted != tt.counted {
				t.Fatalf("TenantLocks = %+v, %v", locks, err)
			}
			done, err := DropIdleTenantLocks(poolsDir, uid)
			if err != nil {
				t.Fatal(err)
			}
			_, serr := os.Lstat(tenantLockPath(poolsDir, "namespace=a"))
			if gone := os.IsNotExist(serr); gone != tt.removed || (len(done) == 1) != tt.removed {
				t.Errorf("lock file gone %v (%v), want %v", gone, done, tt.removed)
			}
		})
	}
}

// token makes tenant namespace=a's token in pool p of poolsDir, linked
// by n address records.
func token(t *testing.T, poolsDir, p string, n int) {
	t.Helper()
	d := stateDir{dir: filepath.Join(poolsDir, p)}
	for _, dir := range []string{d.tokensDir(), d.recordsDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	tok := d.tokenPath(pool.TenantName("namespace=a"), 0)
	if err := os.WriteFile(tok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.Link(tok, filepath.Join(d.recordsDir(), fmt.Sprintf("10.0.0.%d", i+2))); err != nil {
			t.Fatal(err)
		}
	}
}
