package hardening

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// migrationCall is cmd for virt-launcher container id of VM key
// ("vms/vm/<domain>", the "kubevirt" key: a migration name counts for a
// VM's key alone), started for migration mig ("" for none).
func migrationCall(s setup, cmd, id, key, mig string) testbin.Call {
	annotations := map[string]string{alloc.AnnotationKubevirtDomain: strings.TrimPrefix(key, "vms/vm/")}
	if mig != "" {
		annotations[alloc.AnnotationMigrationJob] = mig
	}
	c := call(s.plugin, cmd, id, s.conf(withAnnotations(annotations)))
	c.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=virt-launcher-" + id
	return c
}

// owners maps each address of dir a sticky key keeps to the containers
// that have it: its owner, and a migration's target.
func owners(t *testing.T, dir string) map[string][]string {
	t.Helper()
	holds, err := alloc.ListHolds(hostlocal.Reader(dir))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range holds {
		if e.Stale != "" || e.Held() {
			continue
		}
		out[e.Address] = append(out[e.Address], e.Owner)
		if e.Second != "" {
			out[e.Address] = append(out[e.Address], e.Second)
		}
	}
	return out
}

// TestCrashConsistencyMigration SIGKILLs the ADDs and DELs of a few VMs'
// virt-launcher pods at random moments while they migrate: each round
// DELs some of a VM's pods and starts one more (a source when it seems to
// have none, else a migration target with a new name), sometimes a third.
// Half the DELs come without pod args or annotations, as a runtime's DEL
// may after a restart (issue 37). After every round: the state is
// consistent (stickyState), every VM keeps the one address it was first
// told (reserved or held: holdFor "0"), every pod whose ADD succeeded and
// that was not DELed since owns it or shares it, no refused pod does, and
// no record, as written, names a pod whose DEL succeeded: never a third
// owner, never no owner while one runs, never the address free while its
// key holds it, never a deleted source left in the record.
func TestCrashConsistencyMigration(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d16))
	dataDir := t.TempDir()
	s := standaloneSetup(dataDir, "crash-migration", "10.81.0.0/27", `,"sticky":{"by":["kubevirt"],"holdFor":"0"}`)
	dir := s.stateOf(dataDir)
	type pod struct{ id, key string }
	const rounds, vms = 50, 4
	var (
		tried   = map[string]bool{}
		pods    = map[string][]pod{} // per VM: pods that may have the address
		running = map[string]bool{}  // ADD succeeded, not killed, no DEL since
		refused = map[string]bool{}  // ADD refused, not killed: owns nothing
		told    = map[string]string{}
		next    int
		stats   = map[string]int{}
	)
	for round := range rounds {
		type job struct {
			p         pod
			cmd, mig  string
			kill      bool
			keyless   bool // a DEL without pod args or annotations
			delayNano int64
		}
		var jobs []job
		for v := range vms {
			key := fmt.Sprintf("vms/vm/vm-%d", v)
			var keep []pod
			for _, p := range pods[key] {
				if rng.IntN(2) == 0 {
					jobs = append(jobs, job{p: p, cmd: "DEL"})
					delete(running, p.id)
				} else {
					keep = append(keep, p)
				}
			}
			pods[key] = keep
			starts := 1 + rng.IntN(2)
			for i := range starts {
				next++
				p := pod{id: fmt.Sprintf("launcher-%04d", next), key: key}
				tried[p.id] = true
				mig := ""
				if len(keep) > 0 || i > 0 {
					mig = fmt.Sprintf("mig-%04d", next)
				}
				jobs = append(jobs, job{p: p, cmd: "ADD", mig: mig})
			}
		}
		for id := range refused { // the runtime's rollback DEL of a refused ADD
			jobs = append(jobs, job{p: pod{id: id, key: "none"}, cmd: "DEL"})
		}
		for i := range jobs {
			jobs[i].kill = rng.IntN(3) == 0
			jobs[i].keyless = jobs[i].cmd == "DEL" && rng.IntN(2) == 0
			jobs[i].delayNano = rng.Int64N(int64(15 * time.Millisecond))
		}
		wasRefused := refused
		refused = map[string]bool{}
		deleted := map[string]bool{} // DEL succeeded this round: named by no record
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, j := range jobs {
			c := migrationCall(s, j.cmd, j.p.id, j.p.key, j.mig)
			if j.keyless {
				c = call(s.plugin, j.cmd, j.p.id, s.conf(""))
			}
			p := startCall(t, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if j.kill {
					p.killAfter(time.Duration(j.delayNano))
				}
				o := p.wait(t)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case o.killed && j.cmd == "ADD":
					stats["killed ADD"]++
					pods[j.p.key] = append(pods[j.p.key], j.p) // DEL it later
				case o.killed:
					stats["killed DEL"]++
					if !wasRefused[j.p.id] {
						pods[j.p.key] = append(pods[j.p.key], j.p) // DEL it again
					}
				case j.cmd == "DEL" && o.exit != 0:
					t.Errorf("DEL %s failed: %s", j.p.id, o.stdout)
				case j.cmd == "DEL":
					stats[fmt.Sprintf("ok DEL (keyless %v)", j.keyless)]++
					deleted[j.p.id] = true
				case o.exit == 0:
					stats[fmt.Sprintf("ok ADD (target %v)", j.mig != "")]++
					addr := firstAddr(t, o.stdout)
					if prev, ok := told[j.p.key]; ok && prev != addr {
						t.Errorf("round %d: %s got %s, earlier %s", round, j.p.key, addr, prev)
					}
					told[j.p.key] = addr
					pods[j.p.key] = append(pods[j.p.key], j.p)
					running[j.p.id] = true
				case o.err.Code == 105 || o.err.Code == 107:
					stats[fmt.Sprintf("%d ADD", o.err.Code)]++
					refused[j.p.id] = true
				default:
					t.Errorf("ADD %s (migration %q) failed: %s", j.p.id, j.mig, o.stdout)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		has, _ := stickyState(t, dir, func(id string) bool { return tried[id] })
		for key, addr := range told {
			if has[key+"@eth0"] != addr {
				t.Fatalf("round %d: %s was told %s, the state keeps %q", round, key, addr, has[key+"@eth0"])
			}
		}
		own := owners(t, dir)
		for key, ps := range pods {
			for _, p := range ps {
				if running[p.id] && !contains(own[told[key]], p.id) {
					t.Fatalf("round %d: %s runs but %s of %s is %v's", round, p.id, told[key], key, own[told[key]])
				}
			}
		}
		for addr, ids := range own {
			for _, id := range ids {
				if refused[id] || wasRefused[id] {
					t.Fatalf("round %d: refused %s has %s (owners %v)", round, id, addr, ids)
				}
			}
		}
		for _, h := range writtenHolds(t, dir) {
			if deleted[h.Owner] || deleted[h.Second] {
				t.Fatalf("round %d: the record of %s, as written, still names a pod whose DEL succeeded: %+v", round, h.Key, h)
			}
		}
	}
	t.Logf("%d rounds; outcomes %v", rounds, stats)
	for _, ps := range pods {
		for _, p := range ps {
			testbin.MustSucceed(t, migrationCall(s, "DEL", p.id, p.key, ""))
		}
	}
	has, reserved := stickyState(t, dir, func(id string) bool { return tried[id] })
	if len(reserved) != 0 {
		t.Fatalf("reservations after DEL of every pod: %v", reserved)
	}
	for key, addr := range told {
		if has[key+"@eth0"] != addr {
			t.Fatalf("%s was told %s, after every DEL the state keeps %q", key, addr, has[key+"@eth0"])
		}
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
