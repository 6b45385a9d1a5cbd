package etcd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// killable is one exec of the binary that the test may SIGKILL.
type killable struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

func startKillable(t *testing.T, c testbin.Call) *killable {
	t.Helper()
	k := &killable{cmd: exec.Command(filepath.Join(binDir, c.Plugin))}
	k.cmd.Env, k.cmd.Stdin, k.cmd.Stdout, k.cmd.Stderr = c.Environ(), bytes.NewReader(c.Stdin), &k.stdout, &k.stderr
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return k
}

// wait returns the exit code, -1 when the test's SIGKILL ended it.
func (k *killable) wait(t *testing.T) int {
	err := k.cmd.Wait()
	if ws, ok := k.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if ws.Signal() != syscall.SIGKILL {
			t.Fatalf("died of %v", ws.Signal())
		}
		return -1
	}
	if err != nil {
		return k.cmd.ProcessState.ExitCode()
	}
	return 0
}

// vmHolds reads the test's holds from etcd: per sticky key, the address
// and the containers that have it (owner, and a migration's target).
func vmHolds(t *testing.T) map[string]alloc.Hold {
	t.Helper()
	out := map[string]alloc.Hold{}
	for k, v := range stateValues(t) {
		if !strings.Contains(k, "/sticky/") {
			continue
		}
		var h alloc.Hold
		if err := json.Unmarshal([]byte(v), &h); err != nil {
			t.Fatalf("hold %s: %v: %s", k, err, v)
		}
		if _, dup := out[h.Key]; dup {
			t.Fatalf("key %s has two holds", h.Key)
		}
		out[h.Key] = h
	}
	return out
}

// keylessConf is h's VM network as a runtime's DEL may send it after a
// restart: without the pod's annotations (and so without its key).
func keylessConf(t *testing.T, h host) []byte {
	var conf map[string]any
	if err := json.Unmarshal(vmConf(t, h, "none", ""), &conf); err != nil {
		t.Fatal(err)
	}
	delete(conf, "runtimeConfig")
	return mustJSON(t, conf)
}

// TestCrashConsistencyMigrationAcrossHosts SIGKILLs ipam-da-etcd's ADDs
// and DELs of migrating VMs' virt-launcher pods on two hosts at random
// moments; half the DELs come without pod args or annotations (issue
// 37). After every round each VM keeps the one address it was first
// told (holdFor "0"), every pod whose ADD succeeded and that was not
// DELed since is its owner or its migration target, and no refused pod
// is either: never a third owner, never no owner while one runs, never
// the address free while its key holds it.
func TestCrashConsistencyMigrationAcrossHosts(t *testing.T) {
	needCluster(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0xe7cd))
	hosts := []host{newHost(t, "host-a"), newHost(t, "host-b")}
	type pod struct {
		id, domain string
		h          host
	}
	const rounds, vms = 25, 3
	var (
		pods    = map[string][]pod{}
		running = map[string]bool{}
		refused = map[string]bool{}
		told    = map[string]string{}
		next    int
		stats   = map[string]int{}
		history = map[string][]string{} // per pod: what each of its commands did
	)
	key := func(domain string) string { return "vms/vm/" + domain }
	for round := range rounds {
		type job struct {
			p       pod
			cmd     string
			mig     string
			kill    time.Duration // 0: not killed
			keyless bool          // a DEL without pod args or annotations
		}
		var jobs []job
		for v := range vms {
			domain := fmt.Sprintf("vm-%d", v)
			var keep []pod
			for _, p := range pods[domain] {
				if rng.IntN(2) == 0 {
					jobs = append(jobs, job{p: p, cmd: "DEL"})
					delete(running, p.id)
				} else {
					keep = append(keep, p)
				}
			}
			pods[domain] = keep
			for i := range 1 + rng.IntN(2) {
				next++
				p := pod{id: fmt.Sprintf("launcher-%04d", next), domain: domain, h: hosts[rng.IntN(2)]}
				mig := ""
				if len(keep) > 0 || i > 0 {
					mig = fmt.Sprintf("mig-%04d", next)
				}
				jobs = append(jobs, job{p: p, cmd: "ADD", mig: mig})
			}
		}
		wasRefused := refused
		refused = map[string]bool{}
		deleted := map[string]bool{} // DEL succeeded this round: owns nothing
		for id := range wasRefused { // the runtime's rollback DEL of a refused ADD
			jobs = append(jobs, job{p: pod{id: id, domain: "none", h: hosts[0]}, cmd: "DEL"})
		}
		for i := range jobs {
			if rng.IntN(3) == 0 {
				jobs[i].kill = time.Duration(1 + rng.Int64N(int64(20*time.Millisecond)))
			}
			jobs[i].keyless = jobs[i].cmd == "DEL" && rng.IntN(2) == 0
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, j := range jobs {
			c := testbin.Call{Plugin: "ipam-da-etcd", Command: j.cmd, ContainerID: j.p.id, IfName: "eth0", Netns: "/var/run/netns/none",
				Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=virt-launcher-" + j.p.id, Path: binDir, Stdin: vmConf(t, j.p.h, j.p.domain, j.mig)}
			if j.keyless {
				c.Args, c.Stdin = "", keylessConf(t, j.p.h)
			}
			k := startKillable(t, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if j.kill > 0 {
					time.Sleep(j.kill)
					_ = k.cmd.Process.Kill()
				}
				exit := k.wait(t)
				mu.Lock()
				defer mu.Unlock()
				history[j.p.id] = append(history[j.p.id], fmt.Sprintf("round %d %s on %s (migration %q, keyless %v): exit %d %s %s", round, j.cmd, j.p.h.node, j.mig, j.keyless, exit, strings.TrimSpace(k.stdout.String()), k.stderr.String()))
				switch {
				case exit < 0:
					stats["killed "+j.cmd]++
					if j.cmd == "ADD" || !wasRefused[j.p.id] {
						pods[j.p.domain] = append(pods[j.p.domain], j.p) // DEL it (again) later
					}
				case j.cmd == "DEL" && exit != 0:
					// A DEL that kept finding a sticky address changed
					// under it is code 11: the runtime retries it.
					if !strings.Contains(k.stdout.String(), `"code": 11`) && !strings.Contains(k.stdout.String(), `"code":11`) {
						t.Errorf("DEL %s failed: %s", j.p.id, k.stdout.String())
					}
					stats["11 DEL"]++
					if !wasRefused[j.p.id] {
						pods[j.p.domain] = append(pods[j.p.domain], j.p)
					}
				case j.cmd == "DEL":
					stats["ok DEL"]++
					deleted[j.p.id] = true
				case exit == 0:
					stats[fmt.Sprintf("ok ADD (target %v)", j.mig != "")]++
					addr := addrsOf(t, k.stdout.Bytes())[0].String()
					if prev, ok := told[j.p.domain]; ok && prev != addr {
						t.Errorf("round %d: %s got %s, earlier %s", round, j.p.domain, addr, prev)
					}
					told[j.p.domain] = addr
					pods[j.p.domain] = append(pods[j.p.domain], j.p)
					running[j.p.id] = true
				default:
					var e struct{ Code uint }
					_ = json.Unmarshal(k.stdout.Bytes(), &e)
					if e.Code != 105 && e.Code != 107 && e.Code != 11 {
						t.Errorf("ADD %s (migration %q) failed: %s", j.p.id, j.mig, k.stdout.String())
					}
					stats[fmt.Sprintf("%d ADD", e.Code)]++
					refused[j.p.id] = true
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		holds := vmHolds(t)
		for domain, addr := range told {
			h, ok := holds[key(domain)]
			if !ok || h.Address != addr {
				t.Fatalf("round %d: %s was told %s, etcd keeps %+v", round, domain, addr, h)
			}
			for _, p := range pods[domain] {
				if running[p.id] && !h.OwnedBy(p.h.node, p.id) && !h.SecondIs(p.h.node, p.id) {
					t.Fatalf("round %d: %s runs on %s but %s's hold is %+v", round, p.id, p.h.node, domain, h)
				}
			}
			for id := range refused {
				if h.Owner == id || h.Second == id {
					t.Fatalf("round %d: refused %s has %s: %+v", round, id, addr, h)
				}
			}
			for id := range deleted {
				if h.Owner == id || h.Second == id {
					t.Fatalf("round %d: %s, whose DEL succeeded, has %s: %+v\n%s", round, id, addr, h, strings.Join(history[id], "\n"))
				}
			}
		}
	}
	t.Logf("%d rounds; outcomes %v", rounds, stats)
	for _, ps := range pods {
		for _, p := range ps {
			if r := vmCall(t, "DEL", p.h, p.id, p.domain, ""); r.Exit != 0 {
				t.Fatalf("final DEL %s: %s", p.id, r.Stdout)
			}
		}
	}
	for domain, addr := range told {
		if h := vmHolds(t)[key(domain)]; h.Address != addr || !h.Held() {
			t.Fatalf("after every DEL %s's hold is %+v, want %s held; its owner's commands:\n%s\nstate: %v", domain, h, addr,
				strings.Join(history[h.Owner], "\n"), stateValues(t))
		}
	}
}
