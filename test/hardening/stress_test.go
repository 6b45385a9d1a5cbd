package hardening

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// TestStressSharedPool: 32 workers run 500 mixed ADD, DEL, CHECK and
// duplicate-ADD operations through ipam-delegated on two networks that
// share one named pool. No address is ever handed to two live attachments,
// every answer is the one the state calls for, the index agrees with the
// reservation files, and DEL of everything leaves nothing.
func TestStressSharedPool(t *testing.T) {
	const workers, ops = 32, 500
	dataDir := t.TempDir()
	// Same pool, two networks; a /25 is 125 addresses, about what the
	// workload keeps live, so exhaustion (100) happens now and then too.
	nets := []setup{
		chainSetup(dataDir, "stress-a", "shared", "10.90.0.0/25", ""),
		chainSetup(dataDir, "stress-b", "shared", "10.90.0.0/25", ""),
	}
	poolDir := filepath.Join(dataDir, "_pools", "shared")

	type liveAtt struct {
		id, addr string
		net      int
		result   []byte // ADD's result, the prevResult of CHECK and DEL
	}
	var (
		mu      sync.Mutex
		live    = map[string]*liveAtt{} // idle live attachments
		claimed = map[string]*liveAtt{} // live, in use by a worker
		owners  = map[string]string{}   // address -> live attachment
		nextID  int
		stats   = map[string]int{}
	)
	// claim takes a random idle live attachment for exclusive use.
	claim := func(rng *rand.Rand) *liveAtt {
		mu.Lock()
		defer mu.Unlock()
		if len(live) == 0 {
			return nil
		}
		n := rng.IntN(len(live))
		for id, a := range live {
			if n == 0 {
				delete(live, id)
				claimed[id] = a
				return a
			}
			n--
		}
		return nil
	}
	unclaim := func(a *liveAtt) {
		mu.Lock()
		defer mu.Unlock()
		delete(claimed, a.id)
		live[a.id] = a
	}
	count := func(what string) {
		mu.Lock()
		stats[what]++
		mu.Unlock()
	}

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	work := make(chan int, ops)
	for i := range ops {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			for range work {
				if t.Failed() {
					return
				}
				op := rng.IntN(100)
				var a *liveAtt
				if op >= 50 && op < 95 {
					if a = claim(rng); a == nil {
						op = 0 // nothing live yet: ADD instead
					}
				}
				switch {
				case op < 50: // ADD of a new attachment
					mu.Lock()
					nextID++
					id := fmt.Sprintf("stress-%04d", nextID)
					mu.Unlock()
					ni := rng.IntN(len(nets))
					r := testbin.Run(call(nets[ni].plugin, "ADD", id, nets[ni].conf("")))
					switch code(r) {
					case 0:
						addr := firstAddr(t, r.Stdout)
						mu.Lock()
						if prev, dup := owners[addr]; dup {
							t.Errorf("%s handed to %s while %s holds it", addr, id, prev)
						}
						owners[addr] = id
						live[id] = &liveAtt{id: id, addr: addr, net: ni, result: r.Stdout}
						mu.Unlock()
						count("ADD ok")
					case 100:
						count("ADD exhausted")
					default:
						t.Errorf("ADD %s: unexpected %s", id, r.Stdout)
					}
				case op < 75: // DEL, with or without prevResult
					extra := ""
					if rng.IntN(2) == 0 {
						extra = `,"prevResult":` + string(a.result)
					}
					mu.Lock()
					delete(owners, a.addr) // before the DEL: the address may be reused at once
					mu.Unlock()
					r := testbin.Run(call(nets[a.net].plugin, "DEL", a.id, nets[a.net].conf(extra)))
					if r.Exit != 0 {
						t.Errorf("DEL %s: %s", a.id, r.Stdout)
					}
					mu.Lock()
					delete(claimed, a.id)
					mu.Unlock()
					count("DEL")
				case op < 90: // CHECK of a live attachment
					r := testbin.Run(call(nets[a.net].plugin, "CHECK", a.id, nets[a.net].conf(`,"prevResult":`+string(a.result))))
					if r.Exit != 0 {
						t.Errorf("CHECK %s (%s): %s", a.id, a.addr, r.Stdout)
					}
					unclaim(a)
					count("CHECK")
				case op < 95: // ADD again on the same network: 102
					// A failed ADD ends the attachment: the runtime
					// follows it with its own DEL (ipam-delegated's
					// rollback of a 102 leaves the allocator alone). The
					// address may be reused as soon as that DEL frees
					// it, so it stops being a.id's first.
					mu.Lock()
					delete(owners, a.addr)
					mu.Unlock()
					r := testbin.Run(call(nets[a.net].plugin, "ADD", a.id, nets[a.net].conf("")))
					if code(r) != 102 {
						t.Errorf("second ADD of %s: code %d, want 102: %s", a.id, code(r), r.Stdout)
					}
					if r := testbin.Run(call(nets[a.net].plugin, "DEL", a.id, nets[a.net].conf(""))); r.Exit != 0 {
						t.Errorf("DEL after the failed ADD of %s: %s", a.id, r.Stdout)
					}
					mu.Lock()
					delete(claimed, a.id)
					mu.Unlock()
					count("ADD duplicate")
				default: // DEL of an attachment nobody has
					r := testbin.Run(call(nets[rng.IntN(2)].plugin, "DEL", fmt.Sprintf("ghost-%d", rng.IntN(1000)), nets[0].conf("")))
					if r.Exit != 0 {
						t.Errorf("DEL of an unknown attachment: %s", r.Stdout)
					}
					count("DEL unknown")
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d operations by %d workers: %v", ops, workers, stats)
	if t.Failed() {
		return
	}

	// The files say exactly what the workers were told.
	state := readState(t, poolDir, true)
	if len(state) != len(live) {
		t.Errorf("%d reservations for %d live attachments", len(state), len(live))
	}
	for _, a := range live {
		h, ok := state[a.addr]
		if !ok || h.id != a.id || h.network != nets[a.net].name {
			t.Errorf("%s was given %s on %s, but the file says %+v", a.id, a.addr, nets[a.net].name, h)
		}
	}
	// A no-op operation validates the index (rebuilding it if needed).
	testbin.MustSucceed(t, call(nets[0].plugin, "DEL", "stress-unknown", nets[0].conf("")))
	checkIndex(t, poolDir, state)

	for _, a := range live {
		testbin.MustSucceed(t, call(nets[a.net].plugin, "DEL", a.id, nets[a.net].conf("")))
	}
	if state := readState(t, poolDir, true); len(state) != 0 {
		t.Fatalf("reservations left after DEL of everything: %v", state)
	}
	checkIndex(t, poolDir, nil)
}
