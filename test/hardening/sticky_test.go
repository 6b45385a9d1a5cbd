package hardening

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// stickyCall is cmd for container id on ifname with sticky key key ("":
// none, as a DEL without the pod's arguments comes).
func stickyCall(s setup, cmd, id, ifname, key string) testbin.Call {
	c := call(s.plugin, cmd, id, s.conf(""))
	c.IfName = ifname
	if key != "" {
		c.Args = alloc.ArgStickyKey + "=" + key
	}
	return c
}

// stickyState reads a state directory with holds and fails the test
// unless it is consistent: every file a reservation of a known container
// or "_sticky <ID>" with a record that names it, every valid record's
// address distinct (no address for two keys), no key with two addresses
// on one interface. It returns (key, ifname) → address for every key that
// has one, and address → container ID for the reserved addresses.
func stickyState(t *testing.T, dir string, known func(id string) bool) (map[string]string, map[string]string) {
	t.Helper()
	rs, err := hostlocal.ReadReservations(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	holds, err := alloc.ListHolds(hostlocal.Reader(dir))
	if err != nil {
		t.Fatal(err)
	}
	byAddr := map[string]alloc.HoldRecord{}
	keys := map[string]string{}
	for _, e := range holds {
		if e.Stale != "" {
			continue
		}
		if other, dup := byAddr[e.Address]; dup {
			t.Fatalf("%s is kept for two keys: %q and %q", e.Address, other.Key, e.Key)
		}
		byAddr[e.Address] = e
		k := e.Key + "@" + e.IfName
		if a, dup := keys[k]; dup {
			t.Fatalf("key %s has two addresses: %s and %s", k, a, e.Address)
		}
		keys[k] = e.Address
	}
	reserved := map[string]string{}
	perAtt := map[string]string{}
	for _, r := range rs {
		addr := r.Addr.String()
		if id, ok := alloc.HoldIDOf(r.Owner); ok {
			if e, found := byAddr[addr]; !found || e.ID != id || !e.Held() {
				t.Fatalf("%s is held (%s) without a record that holds it", addr, id)
			}
			continue
		}
		if r.Problem != "" || !known(r.Owner.ContainerID) {
			t.Fatalf("%s is reserved by %+v: not an attachment the test tried (%s)", addr, r.Owner, r.Problem)
		}
		att := r.Owner.ContainerID + "@" + r.Owner.IfName
		if other, dup := perAtt[att]; dup {
			t.Fatalf("%s holds %s and %s", att, other, addr)
		}
		perAtt[att] = addr
		reserved[addr] = r.Owner.ContainerID
	}
	return keys, reserved
}

// TestCrashConsistencySticky SIGKILLs concurrent ADDs (new container IDs
// for a few sticky keys, on two interfaces) and DELs at random moments.
// After every round: the state is consistent (stickyState), and every
// key that was ever told an address still has exactly that one, reserved
// or held (holdFor "0": nothing expires); a later successful ADD of the
// key gets it again. At the end DEL of everything leaves only holds, GC
// keeps them, and fsck finds nothing to repair.
func TestCrashConsistencySticky(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x571c))
	dataDir := t.TempDir()
	s := standaloneSetup(dataDir, "crash-sticky", "10.79.0.0/26", `,"sticky":{"by":["arg"],"holdFor":"0"}`)
	dir := s.stateOf(dataDir)
	ifnames := []string{"eth0", "net1"}
	type att struct{ id, key, ifname string }
	var (
		tried   = map[string]bool{}
		live    []att                 // possibly holding an address: ADD succeeded or was killed
		told    = map[string]string{} // key@ifname → the address an ADD answered
		next    int
		stats   = map[string]int{}
		known   = func(id string) bool { return tried[id] }
		keyName = func(i int) string { return fmt.Sprintf("ns/set-%d", i) }
	)
	const rounds, keys = 60, 8
	for round := range rounds {
		type job struct {
			a    att
			cmd  string
			kill bool
		}
		var jobs []job
		// DEL about half of the live attachments (all uncertain ones come
		// back eventually), without the key, as a runtime may.
		var keep []att
		for _, a := range live {
			if rng.IntN(2) == 0 {
				jobs = append(jobs, job{a: a, cmd: "DEL"})
			} else {
				keep = append(keep, a)
			}
		}
		live = keep
		for range 6 {
			next++
			a := att{id: fmt.Sprintf("sticky-%04d", next), key: keyName(rng.IntN(keys)), ifname: ifnames[rng.IntN(2)]}
			tried[a.id] = true
			jobs = append(jobs, job{a: a, cmd: "ADD"})
		}
		for i := range jobs {
			jobs[i].kill = rng.IntN(3) == 0
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, j := range jobs {
			key := j.a.key
			if j.cmd == "DEL" {
				key = ""
			}
			p := startCall(t, stickyCall(s, j.cmd, j.a.id, j.a.ifname, key))
			delay := time.Duration(rng.Int64N(int64(15 * time.Millisecond)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				if j.kill {
					p.killAfter(delay)
				}
				o := p.wait(t)
				mu.Lock()
				defer mu.Unlock()
				k := j.a.key + "@" + j.a.ifname
				switch {
				case o.killed:
					stats["killed "+j.cmd]++
					live = append(live, j.a) // DEL it (again) later
				case j.cmd == "DEL" && o.exit != 0:
					t.Errorf("DEL %s failed: %s", j.a.id, o.stdout)
				case j.cmd == "DEL":
					stats["ok DEL"]++
				case o.exit == 0:
					stats["ok ADD"]++
					addr := firstAddr(t, o.stdout)
					if prev, ok := told[k]; ok && prev != addr {
						t.Errorf("round %d: key %s got %s, earlier %s", round, k, addr, prev)
					}
					told[k] = addr
					live = append(live, j.a)
				case o.err.Code == 105: // the key's address is another live container's
					stats["105 ADD"]++
				case o.err.Code == 100:
					stats["100 ADD"]++
				default:
					t.Errorf("ADD %s failed: %s", j.a.id, o.stdout)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		has, _ := stickyState(t, dir, known)
		for k, addr := range told {
			if has[k] != addr {
				t.Fatalf("round %d: key %s was told %s, the state keeps %q", round, k, addr, has[k])
			}
		}
	}
	t.Logf("%d rounds; outcomes %v; %d keys told an address", rounds, stats, len(told))

	// DEL of everything: only holds remain, one per key that has an address.
	for _, a := range live {
		testbin.MustSucceed(t, stickyCall(s, "DEL", a.id, a.ifname, ""))
	}
	testbin.MustSucceed(t, gcCall(s.plugin, s.conf(`,"cni.dev/valid-attachments":[]`)))
	has, reserved := stickyState(t, dir, known)
	if len(reserved) != 0 {
		t.Fatalf("reservations after DEL of everything and GC: %v", reserved)
	}
	for k, addr := range told {
		if has[k] != addr {
			t.Fatalf("key %s was told %s, after GC the state keeps %q", k, addr, has[k])
		}
	}
	// fsck: no hold problem (a killed process may leave a scratch file).
	r := testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: []string{"fsck", "--data-dir", dataDir, "-o", "json"}})
	var findings []struct{ Severity, Finding string }
	if err := json.Unmarshal(r.Stdout, &findings); err != nil || r.Exit > 1 {
		t.Fatalf("fsck after the crashes: exit %d %v\n%s%s", r.Exit, err, r.Stdout, r.Stderr)
	}
	for _, f := range findings {
		if f.Severity == "problem" && !strings.HasPrefix(f.Finding, "stale scratch file") {
			t.Errorf("fsck after the crashes: %s", f.Finding)
		}
	}
	// Every key gets its address back under a new container ID.
	for k, addr := range told {
		key, ifname, _ := strings.Cut(k, "@")
		next++
		id := fmt.Sprintf("sticky-%04d", next)
		tried[id] = true
		if got := firstAddr(t, testbin.MustSucceed(t, stickyCall(s, "ADD", id, ifname, key)).Stdout); got != addr {
			t.Errorf("key %s got %s after everything, want %s", k, got, addr)
		}
	}
	stickyState(t, dir, known)
}

// TestConcurrentStickyAdds: 32 concurrent ADDs over 16 keys on two
// interfaces get 32 distinct addresses, one per key and interface; after
// concurrent DELs a second wave of 32 with new container IDs gets exactly
// the same; then two new containers per key race on eth0 while the
// second wave still has it: every one gets 105, and after the DELs, of
// two racing containers exactly one wins and the other gets 105.
func TestConcurrentStickyAdds(t *testing.T) {
	dataDir := t.TempDir()
	s := standaloneSetup(dataDir, "busy-sticky", "10.80.0.0/24", `,"sticky":{"by":["arg"],"holdFor":"30m"}`)
	const keys = 16
	type res struct {
		addr string
		code uint
	}
	wave := func(name string, calls []testbin.Call) []res {
		out := make([]res, len(calls))
		var wg sync.WaitGroup
		for i, c := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := testbin.Run(c)
				switch {
				case r.Exit == 0 && c.Command == "ADD":
					out[i].addr = firstAddr(t, r.Stdout)
				case r.Exit != 0:
					out[i].code = r.Err().Code
				}
			}()
		}
		wg.Wait()
		return out
	}
	adds := func(w string) []testbin.Call {
		var cs []testbin.Call
		for k := range keys {
			for _, ifname := range []string{"eth0", "net1"} {
				cs = append(cs, stickyCall(s, "ADD", fmt.Sprintf("%s-%d", w, k), ifname, fmt.Sprintf("ns/db-%d", k)))
			}
		}
		return cs
	}
	dels := func(w string) []testbin.Call {
		var cs []testbin.Call
		for k := range keys {
			for _, ifname := range []string{"eth0", "net1"} {
				cs = append(cs, stickyCall(s, "DEL", fmt.Sprintf("%s-%d", w, k), ifname, ""))
			}
		}
		return cs
	}
	first := wave("first", adds("w1"))
	seen := map[string]int{}
	for i, r := range first {
		if r.addr == "" {
			t.Fatalf("ADD %d failed: code %d", i, r.code)
		}
		if j, dup := seen[r.addr]; dup {
			t.Fatalf("%s handed to ADD %d and %d", r.addr, j, i)
		}
		seen[r.addr] = i
	}
	wave("del", dels("w1"))
	for i, r := range wave("second", adds("w2")) {
		if r.addr != first[i].addr {
			t.Errorf("second wave ADD %d got %q (code %d), first wave %s", i, r.addr, r.code, first[i].addr)
		}
	}
	// The second wave is live: racers get 105.
	var racers []testbin.Call
	for k := range keys {
		for _, who := range []string{"a", "b"} {
			racers = append(racers, stickyCall(s, "ADD", fmt.Sprintf("race%s-%d", who, k), "eth0", fmt.Sprintf("ns/db-%d", k)))
		}
	}
	for i, r := range wave("racers under live pods", racers) {
		if r.code != 105 {
			t.Errorf("racer %d: %+v, want 105", i, r)
		}
	}
	wave("del", dels("w2"))
	got := wave("racers", racers)
	for k := range keys {
		a, b := got[2*k], got[2*k+1]
		want := first[2*k].addr // eth0 of key k
		if (a.addr == want) == (b.addr == want) || a.code+b.code != 105 {
			t.Errorf("key %d: racers got %+v and %+v, want one %s and one 105", k, a, b, want)
		}
	}
	keysHas, _ := stickyState(t, s.stateOf(dataDir), func(id string) bool {
		return strings.HasPrefix(id, "race") || strings.HasPrefix(id, "w")
	})
	if len(keysHas) != 2*keys {
		t.Errorf("%d key/interface pairs keep an address, want %d", len(keysHas), 2*keys)
	}
}
