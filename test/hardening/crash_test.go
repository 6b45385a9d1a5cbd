package hardening

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// setup is one way of reaching the allocator: ipam-da-pools standalone
// (host-local's layout) or the ipam-delegated → ipam-ds-static →
// ipam-da-pools chain on a pool.
type setup struct {
	name    string // network name
	plugin  string
	conf    func(extra string) []byte // extra: additional top-level keys
	stateOf func(dataDir string) string
	pool    bool
	tenant  string // a quota's tenant: its records are checked (checkTenants)
	// overflowOf is the state directory of the pool stateOf's overflows
	// into (nil: no overflow chain).
	overflowOf func(dataDir string) string
}

// dirs are the state directories of s: its pool and the one it overflows
// into.
func (s setup) dirs(dataDir string) []string {
	if s.overflowOf == nil {
		return []string{s.stateOf(dataDir)}
	}
	return []string{s.stateOf(dataDir), s.overflowOf(dataDir)}
}

func standaloneSetup(dataDir, network, subnet, ipamExtra string) setup {
	return setup{
		name: network, plugin: "ipam-da-pools",
		conf: func(extra string) []byte {
			return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q%s,"ipam":{"type":"ipam-da-pools","dataDir":%q,"ranges":[[{"subnet":%q}]]%s}}`,
				network, extra, dataDir, subnet, ipamExtra)
		},
		stateOf: func(d string) string { return filepath.Join(d, network) },
	}
}

func chainSetup(dataDir, network, pool, subnet, ipamExtra string) setup {
	return setup{
		name: network, plugin: "ipam-delegated", pool: true,
		conf: func(extra string) []byte {
			return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q%s,"ipam":{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":%q,"pools":[{"name":%q}],"poolDefinitions":{%q:[{"subnet":%q}]}%s}}`,
				network, extra, dataDir, pool, pool, subnet, ipamExtra)
		},
		stateOf: func(d string) string { return filepath.Join(d, "_pools", pool) },
	}
}

// What the test knows about one attachment it tried.
type attState int

const (
	addOK     attState = iota // ADD succeeded: holds exactly addr
	addFailed                 // ADD failed cleanly: holds nothing
	addKilled                 // ADD killed: holds nothing or one address
	deleted                   // DEL succeeded: holds nothing
	delKilled                 // DEL killed: holds nothing or its one address
)

type attempt struct {
	id    string
	setup int
	state attState
	addr  string
}

// crashWorld drives rounds of concurrent, randomly killed ADDs and DELs.
type crashWorld struct {
	t        *testing.T
	rng      *rand.Rand
	dataDir  string
	setups   []setup
	attempts []*attempt
	byID     map[string]*attempt
	next     int
	// stats: outcomes seen
	stats map[string]int
}

type job struct {
	a    *attempt
	cmd  string
	kill bool
}

// round starts every job at once, SIGKILLs those marked after a random
// 0–15 ms, waits for all of them and records the outcomes.
func (w *crashWorld) round(jobs []job) {
	t := w.t
	var wg sync.WaitGroup
	var mu sync.Mutex
	type result struct {
		j job
		o outcome
	}
	var results []result
	for _, j := range jobs {
		s := w.setups[j.a.setup]
		p := startCall(t, call(s.plugin, j.cmd, j.a.id, s.conf("")))
		wg.Add(1)
		var delay time.Duration
		if j.kill {
			delay = time.Duration(w.rng.Int64N(int64(15 * time.Millisecond)))
		}
		go func() {
			defer wg.Done()
			if j.kill {
				p.killAfter(delay)
			}
			o := p.wait(t)
			mu.Lock()
			results = append(results, result{j, o})
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, r := range results {
		a := r.j.a
		switch {
		case r.o.killed:
			w.stats["killed "+r.j.cmd]++
		case r.o.exit == 0:
			w.stats["ok "+r.j.cmd]++
		default:
			w.stats[fmt.Sprintf("code %d %s", r.o.err.Code, r.j.cmd)]++
		}
		switch {
		case r.o.killed && r.j.cmd == "ADD":
			a.state = addKilled
		case r.o.killed:
			a.state = delKilled
		case r.j.cmd == "DEL" && r.o.exit != 0:
			t.Fatalf("DEL %s failed: %s", a.id, r.o.stdout)
		case r.j.cmd == "DEL":
			a.state, a.addr = deleted, ""
		case r.o.exit == 0:
			a.state, a.addr = addOK, firstAddr(t, r.o.stdout)
		case r.o.err.Code == 100: // the /27 is full: legitimate
			a.state = addFailed
		default:
			t.Fatalf("ADD %s failed with an unexpected error: %s", a.id, r.o.stdout)
		}
	}
}

func (w *crashWorld) newAttempt(setup int) *attempt {
	w.next++
	a := &attempt{id: fmt.Sprintf("crash-%04d", w.next), setup: setup, state: addKilled}
	w.attempts = append(w.attempts, a)
	w.byID[a.id] = a
	return a
}

// check verifies, for every setup's state directory, that every file is
// complete and well formed, that no reservation names an attachment the
// test never tried or one that cannot hold it, that no attachment holds two
// addresses, and that every successful, not deleted ADD is still recorded.
func (w *crashWorld) check() map[int]map[string]holder {
	t := w.t
	t.Helper()
	states := map[int]map[string]holder{}
	for si, s := range w.setups {
		state := map[string]holder{}
		for i, dir := range s.dirs(w.dataDir) {
			in := readState(t, dir, s.pool)
			if i > 0 {
				w.stats["reservations seen in an overflow pool"] += len(in)
			}
			maps.Copy(state, in)
		}
		states[si] = state
		held := map[string][]string{}
		for addr, h := range state {
			a, ok := w.byID[h.id]
			if !ok || a.setup != si || h.ifname != "eth0" || (s.pool && h.network != s.name) {
				t.Fatalf("%s: reservation %s names %+v, not an attachment tried on %s", s.name, addr, h, s.name)
			}
			held[h.id] = append(held[h.id], addr)
		}
		for _, a := range w.attempts {
			if a.setup != si {
				continue
			}
			got := held[a.id]
			switch {
			case len(got) > 1:
				t.Fatalf("%s: %s holds %v: two addresses from one range set", s.name, a.id, got)
			case a.state == addOK && (len(got) != 1 || got[0] != a.addr):
				t.Fatalf("%s: %s got %s from a successful ADD but the files say %v", s.name, a.id, a.addr, got)
			case (a.state == addFailed || a.state == deleted) && len(got) > 0:
				t.Fatalf("%s: %s (state %d) still holds %v", s.name, a.id, a.state, got)
			case a.state == addKilled && len(got) == 1:
				w.stats["killed ADD holding an address"]++
			}
		}
	}
	return states
}

// TestCrashConsistency SIGKILLs concurrent ADDs and DELs at random moments
// against two small pools (standalone and through the chain), then checks
// that the state is exactly what the survivors were told, and that DEL, GC
// and later ADDs clean up after and work past every crash.
func TestCrashConsistency(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	dataDir := t.TempDir()
	w := &crashWorld{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), dataDir: dataDir, byID: map[string]*attempt{}, stats: map[string]int{},
		setups: []setup{
			standaloneSetup(dataDir, "crash-sa", "10.77.0.0/27", ""),
			chainSetup(dataDir, "crash-chain", "p27", "10.78.0.0/27", ""),
			quotaSetup(dataDir, "crash-quota", "q27", "10.79.0.0/27"),
			overflowSetup(dataDir, "crash-overflow", "head29", "10.81.0.0/29", "spill27", "10.82.0.0/27"),
		}}
	const rounds, addsPerSetup, delsPerSetup = 120, 6, 3
	kills, jobsRun := 0, 0
	for round := 0; round < rounds; round++ {
		var jobs []job
		for si := range w.setups {
			// DELs: every attachment whose state is uncertain (as a runtime
			// retries), and a few random live ones.
			var live []*attempt
			for _, a := range w.attempts {
				switch {
				case a.setup != si:
				case a.state == addKilled || a.state == delKilled:
					jobs = append(jobs, job{a: a, cmd: "DEL"})
				case a.state == addOK:
					live = append(live, a)
				}
			}
			w.rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
			for _, a := range live[:min(delsPerSetup, len(live))] {
				jobs = append(jobs, job{a: a, cmd: "DEL"})
			}
			for range addsPerSetup {
				jobs = append(jobs, job{a: w.newAttempt(si), cmd: "ADD"})
			}
		}
		for i := range jobs {
			jobs[i].kill = w.rng.IntN(3) == 0
			if jobs[i].kill {
				kills++
			}
		}
		jobsRun += len(jobs)
		w.round(jobs)
		w.check()
		// Whatever index a killed process was writing is detected as
		// stale and rebuilt by the next operation (a no-op here).
		for _, s := range w.setups {
			for _, dir := range s.dirs(dataDir) {
				state := readState(t, dir, s.pool)
				w.stats["stale tenant records the next operation removed"] += checkTenants(t, s, dir, state, func() {
					testbin.MustSucceed(t, call(s.plugin, "DEL", "crash-unknown", s.conf("")))
				})
				checkIndex(t, dir, state)
			}
		}
	}
	t.Logf("%d rounds, %d processes, %d sent SIGKILL; outcomes %v", rounds, jobsRun, kills, w.stats)

	// A no-op operation validates (or rebuilds) each index: it must then
	// agree with the files.
	w.check()
	for _, s := range w.setups {
		testbin.MustSucceed(t, call(s.plugin, "DEL", "crash-unknown", s.conf("")))
		for _, dir := range s.dirs(dataDir) {
			checkIndex(t, dir, readState(t, dir, s.pool))
		}
	}

	// DEL of every attachment ever tried leaves nothing.
	var dels []job
	for _, a := range w.attempts {
		dels = append(dels, job{a: a, cmd: "DEL"})
	}
	w.round(dels)
	for si, s := range w.setups {
		if state := w.check()[si]; len(state) != 0 {
			t.Fatalf("%s: reservations left after DEL of everything: %v", s.name, state)
		}
		for _, dir := range s.dirs(dataDir) {
			checkIndex(t, dir, nil)
		}
		if recs := spillRecords(t, s.stateOf(dataDir)); len(recs) != 0 {
			t.Fatalf("%s: spill records left after DEL of everything: %v", s.name, recs)
		}
	}

	// Another round of killed ADDs, then GC with no valid attachment
	// leaves nothing either.
	var adds []job
	for si := range w.setups {
		for range 8 {
			adds = append(adds, job{a: w.newAttempt(si), cmd: "ADD", kill: w.rng.IntN(2) == 0})
		}
	}
	w.round(adds)
	w.check()
	for _, s := range w.setups {
		testbin.MustSucceed(t, gcCall(s.plugin, s.conf(`,"cni.dev/valid-attachments":[]`)))
		for _, dir := range s.dirs(dataDir) {
			if state := readState(t, dir, s.pool); len(state) != 0 {
				t.Fatalf("%s: reservations left after GC: %v", dir, state)
			}
			checkIndex(t, dir, nil)
			if recs, count := tenantRecords(t, dir, s.tenant); len(recs) != 0 || count != 0 {
				t.Fatalf("%s: tenant records left after GC: %v (count %d)", dir, recs, count)
			}
		}
		if recs := spillRecords(t, s.stateOf(dataDir)); len(recs) != 0 {
			t.Fatalf("%s: spill records left after GC: %v", s.name, recs)
		}
	}
	for _, a := range w.attempts {
		a.state, a.addr = deleted, ""
	}

	// The plugin still allocates, and cleans up after itself.
	for si, s := range w.setups {
		a := w.newAttempt(si)
		r := testbin.MustSucceed(t, call(s.plugin, "ADD", a.id, s.conf("")))
		a.state, a.addr = addOK, firstAddr(t, r.Stdout)
		w.check()
		testbin.MustSucceed(t, call(s.plugin, "DEL", a.id, s.conf("")))
		a.state, a.addr = deleted, ""
	}
	w.check()
}

// TestStoppedLockHolder: a holder of a state directory's lock that is
// stopped (simulated by the test holding the flock, then a real SIGSTOPped
// plugin) makes others fail with code 11 after lockTimeout instead of
// hanging, and everything proceeds once it is gone.
func TestStoppedLockHolder(t *testing.T) {
	dataDir := t.TempDir()
	const lockTimeout = 300 * time.Millisecond
	extra := `,"lockTimeout":"300ms"`
	setups := []setup{
		standaloneSetup(dataDir, "stop-sa", "10.79.0.0/27", extra),
		chainSetup(dataDir, "stop-chain", "p-stop", "10.80.0.0/27", extra),
	}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			dir := s.stateOf(dataDir)
			// Create the state directory and its lock file.
			testbin.MustSucceed(t, call(s.plugin, "DEL", "init", s.conf("")))

			// 1. The test holds the lock: four concurrent ADDs and a DEL
			// give up with 11 after about lockTimeout.
			release, ok := tryLock(t, dir)
			if !ok {
				t.Fatal("lock unexpectedly held")
			}
			var wg sync.WaitGroup
			for i := range 5 {
				cmd := "ADD"
				if i == 4 {
					cmd = "DEL"
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					r := testbin.Run(call(s.plugin, cmd, fmt.Sprintf("blocked-%d", i), s.conf("")))
					took := time.Since(start)
					if code(r) != 11 || took < lockTimeout || took > lockTimeout+execMargin {
						t.Errorf("%s while the lock is held: code %d after %v, want 11 after ~%v: %s", cmd, code(r), took, lockTimeout, r.Stdout)
					}
				}()
			}
			wg.Wait()
			release()
			if state := readState(t, dir, s.pool); len(state) != 0 {
				t.Fatalf("timed-out ADDs reserved %v", state)
			}
			testbin.MustSucceed(t, call(s.plugin, "ADD", "after-release", s.conf("")))

			// 2. A real plugin process stopped while it holds the lock.
			stopped, holderID := stopHoldingLock(t, s, dir)
			r := testbin.Run(call(s.plugin, "ADD", "behind-stopped", s.conf("")))
			if code(r) != 11 {
				t.Fatalf("ADD behind a stopped lock holder: code %d, want 11: %s", code(r), r.Stdout)
			}
			if err := stopped.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if o := stopped.wait(t); o.exit != 0 {
				t.Fatalf("continued holder failed: %s", o.stdout)
			}
			testbin.MustSucceed(t, call(s.plugin, "ADD", "behind-stopped", s.conf("")))

			// 3. Stopped at a random moment, then killed while stopped.
			p := startCall(t, call(s.plugin, "ADD", "stopped-random", s.conf("")))
			time.Sleep(time.Duration(rand.Int64N(int64(15 * time.Millisecond))))
			_ = p.cmd.Process.Signal(syscall.SIGSTOP)
			start := time.Now()
			r = testbin.Run(call(s.plugin, "ADD", "beside-stopped", s.conf("")))
			if c := code(r); (c != 0 && c != 11) || time.Since(start) > lockTimeout+execMargin {
				t.Fatalf("ADD beside a stopped process: code %d after %v: %s", c, time.Since(start), r.Stdout)
			}
			_ = p.cmd.Process.Kill()
			p.wait(t)
			testbin.MustSucceed(t, call(s.plugin, "ADD", "after-kill", s.conf("")))

			// Everything is well formed, and DEL of every attachment
			// tried, then a no-op, leaves nothing and a valid index.
			readState(t, dir, s.pool)
			for _, id := range []string{"after-release", holderID, "behind-stopped", "stopped-random", "beside-stopped", "after-kill"} {
				testbin.MustSucceed(t, call(s.plugin, "DEL", id, s.conf("")))
			}
			if state := readState(t, dir, s.pool); len(state) != 0 {
				t.Fatalf("reservations left: %v", state)
			}
			checkIndex(t, dir, nil)
		})
	}
}

// stopHoldingLock starts ADDs until it catches one holding dir's lock
// (the test's own non-blocking flock fails while the child runs) and
// SIGSTOPs it there. It returns the stopped process and its container ID.
func stopHoldingLock(t *testing.T, s setup, dir string) (*proc, string) {
	t.Helper()
	for attempt := 0; attempt < 100; attempt++ {
		id := fmt.Sprintf("holder-%d", attempt)
		p := startCall(t, call(s.plugin, "ADD", id, s.conf("")))
		for !p.exited() {
			if release, ok := tryLock(t, dir); ok {
				release()
				continue
			}
			// Someone holds it: stop the child, then make sure it is
			// still the holder (it may have released the lock in between).
			_ = p.cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(5 * time.Millisecond)
			if release, ok := tryLock(t, dir); ok {
				release()
				_ = p.cmd.Process.Signal(syscall.SIGCONT)
				break
			}
			t.Logf("caught the lock holder on attempt %d", attempt+1)
			t.Cleanup(func() { _ = p.cmd.Process.Kill() })
			return p, id
		}
		if o := p.wait(t); o.exit != 0 {
			t.Fatalf("holder candidate failed: %s", o.stdout)
		}
		testbin.MustSucceed(t, call(s.plugin, "DEL", id, s.conf("")))
	}
	t.Fatal("never caught a plugin holding the lock")
	return nil, ""
}
