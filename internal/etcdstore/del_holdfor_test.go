package etcdstore_test

import (
	"testing"
	"time"
)

// A DEL holds a sticky address for the holdFor of the ADD that reserved
// it (its record keeps it), whatever the DEL's own configuration says,
// with prevResult (one round trip) or without. While the configuration
// is unchanged, the DEL of a hold taken over (its record names a last
// owner) still takes one request.
func TestDelHoldsForTheAddsHoldFor(t *testing.T) {
	long, short := stickyCase{t: t, holdFor: "1h"}, stickyCase{t: t, holdFor: "5m"}
	a := long.held("host-a", "c1", "web-0")
	if got, _ := long.add("host-a", "c2", "web-0"); got != a {
		t.Fatalf("web-0 got %s back, want %s", got, a)
	}
	before := len(cluster.Requests())
	long.ok("DEL", "host-a", "c2", "web-0", prevOf(a))
	if n := len(cluster.Requests()) - before; n != 1 {
		t.Errorf("DEL of a taken-over hold with prevResult: %d requests, want 1", n)
	}
	for _, prev := range []string{prevOf(a), ""} {
		long.add("host-a", "c3", "web-0")
		start := time.Now()
		short.ok("DEL", "host-a", "c3", "web-0", prev)
		_, held := heldLeases(t)
		if len(held) != 1 || held[0].HoldExpires.Before(start.Add(55*time.Minute)) {
			t.Errorf("DEL (prevResult %q) under holdFor 5m of an ADD's under 1h: holds %+v, want until an hour on", prev, held)
		}
	}
}
