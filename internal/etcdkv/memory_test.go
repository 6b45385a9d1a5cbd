package etcdkv

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// TestMemoryConcurrentExecs: execs that started together each learn of a
// different failed member, and of a lease; what each saves adds to the
// others', so the next exec tries both failed members last and reuses
// the lease. (Saving each exec's own view whole lost the first one's.)
// Of the two, the member that did not answer at all comes last, after
// the one that answered with a refusal (an election's "no leader").
func TestMemoryConcurrentExecs(t *testing.T) {
	cfg := Config{Endpoints: []string{"http://a", "http://b", "http://c"}, StateDir: t.TempDir()}
	one, two, three := New(cfg), New(cfg), New(cfg)
	now := time.Now()
	one.failed("http://a", avoidFor)
	two.failed("http://b", avoidRefusedFor)
	three.memory.update(func(m *memory) { m.Lease = heldLease{ID: 7, Until: now.Add(time.Hour)} })
	next := New(cfg)
	if got := strings.Join(next.order, ","); got != "http://c,http://b,http://a" {
		t.Errorf("order = %s, want c first, then b (refused), a (no answer) last", got)
	}
	if id, err := next.Lease(10 * time.Minute); err != nil || id != 7 {
		t.Errorf("Lease = %d, %v: want the lease another exec remembered", id, err)
	}
	next.ForgetLease()
	if l := New(cfg).memory.Lease; l.ID != 0 {
		t.Errorf("a forgotten lease is still remembered: %+v", l)
	}
}

// TestLease: a lease is granted once and reused by the next execs while
// it has minLeft to live; a write refused for an unknown lease fails with
// ErrLeaseNotFound and forgets it, so the next exec grants a new one.
func TestLease(t *testing.T) {
	m := newMemberFunc(t, func(n int, r *http.Request, body string) answer {
		if r.URL.Path == "/v3/lease/grant" {
			return answer{status: 200, body: fmt.Sprintf(`{"header":{"revision":"7"},"ID":"%d","TTL":"1200"}`, 100+n)}
		}
		return gatewayError(404, 5, "etcdserver: requested lease not found")
	})
	cfg := Config{Endpoints: []string{m.srv.URL}, Timeout: 2 * time.Second, StateDir: t.TempDir()}
	first, err := New(cfg).Lease(10 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := New(cfg)
	if again, err := c.Lease(10 * time.Minute); err != nil || again != first {
		t.Fatalf("second exec's lease %d, %v: want %d reused", again, err, first)
	}
	_, err = c.Txn(Txn{Then: []Op{PutLease("k", []byte("v"), first)}})
	if e := cnierr.As(err); !errors.Is(err, ErrLeaseNotFound) || e == nil || e.Code != cnierr.CodeTryAgainLater {
		t.Fatalf("err = %v, want 11 wrapping ErrLeaseNotFound", err)
	}
	if fresh, err := New(cfg).Lease(10 * time.Minute); err != nil || fresh == first {
		t.Fatalf("after the refusal: lease %d, %v, want a new one", fresh, err)
	}
	grants := 0
	for _, g := range m.got {
		if strings.HasPrefix(g, "/v3/lease/grant ") {
			grants++
			if !strings.Contains(g, `"TTL":"1200"`) {
				t.Errorf("grant %s: want twice minLeft, 1200 s", g)
			}
		}
	}
	if grants != 2 {
		t.Errorf("%d grants, want 2", grants)
	}
}

// TestRememberSeen: what is remembered under a state key is the next
// exec's whichever endpoints it lists, and another key's is not mixed in;
// a newer sight replaces an older one even at a lower revision (a cluster
// restored from a backup).
func TestRememberSeen(t *testing.T) {
	dir := t.TempDir()
	a := New(Config{Endpoints: []string{"http://a"}, StateDir: dir, StateKey: "node-1"})
	a.Remember(map[string]Seen{"k": {Rev: 40, Value: "x"}, "j": {Rev: 7}})
	b := New(Config{Endpoints: []string{"http://proxy-a", "http://proxy-b"}, StateDir: dir, StateKey: "node-1"})
	if got := b.Recall("k"); got != (Seen{Rev: 40, Value: "x"}) {
		t.Fatalf("Recall(k) through other endpoints = %+v, want 40 x", got)
	}
	if got := New(Config{Endpoints: []string{"http://a"}, StateDir: dir, StateKey: "node-2"}).Recall("k"); got != (Seen{}) {
		t.Fatalf("another state key's Recall(k) = %+v, want nothing", got)
	}
	b.Remember(map[string]Seen{"k": {Rev: 12, Value: "y"}})
	c := New(Config{Endpoints: []string{"http://a"}, StateDir: dir, StateKey: "node-1"})
	if k, j := c.Recall("k"), c.Recall("j"); k != (Seen{Rev: 12, Value: "y"}) || j.Rev != 7 {
		t.Fatalf("after a lower revision: k=%+v j=%+v, want 12 y and 7", k, j)
	}
}
