package etcdstore_test

import (
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// A GC never undoes a newer owner: a claim its read found, that a DEL
// and another container's ADD took over before the GC's writes (here
// from within its keep rule, between the two), stays the new owner's.
// Each release compares the revision the GC read (`gc --cri` relies on
// it: the runtime's sandboxes are listed before the claims are read).
func TestGCDoesNotUndoANewerOwner(t *testing.T) {
	c := stickyCase{t: t, holdFor: "30m"}
	a, _ := c.add("host-a", "gone-1", "web-0")
	raced := false
	plan, err := stickyAdmin(t).GCKeeping("host-a", func(o alloc.Attachment) bool {
		if o.ContainerID == "gone-1" && !raced {
			raced = true
			c.ok("DEL", "host-a", "gone-1", "web-0", prevOf(a))
			if b, _ := c.add("host-a", "new-1", "web-0"); b != a {
				t.Fatalf("the new owner got %s, want the held %s", b, a)
			}
		}
		return false
	})
	if err != nil || len(plan) != 1 || plan[0].ContainerID != "gone-1" || !raced {
		t.Fatalf("plan %+v, %v; want gone-1's claim, raced", plan, err)
	}
	ls, err := stickyLeases(t)
	if err != nil || len(ls) != 1 || ls[0].ContainerID != "new-1" || ls[0].Address != a.String() {
		t.Fatalf("after the GC: %+v %v; want %s new-1's", ls, err, a)
	}
	ad := stickyAdmin(t)
	resp, err := ad.Client().Read(etcdkv.Get(ad.AddrKey(alloc.Scope{Network: "net"}, a)))
	if err != nil {
		t.Fatal(err)
	}
	if claim, ok := resp.First(0); !ok || !strings.Contains(string(claim.Value), `"new-1"`) {
		t.Errorf("after the GC, %s's claim key is %q, want new-1's", a, claim.Value)
	}
}
