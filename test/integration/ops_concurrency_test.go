package integration

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// holders tracks which live attachment holds each address, to catch an
// address handed out twice. An address leaves the map before the call
// that frees it starts, so a new holder can only appear after it is free.
type holders struct {
	mu   sync.Mutex
	held map[string]string // network/pool + address -> attachment
	errs []string
}

func (h *holders) take(where, addr, who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := where + " " + addr
	if prev, ok := h.held[key]; ok {
		h.errs = append(h.errs, fmt.Sprintf("%s handed to %s while %s holds it", key, who, prev))
	}
	h.held[key] = who
}

func (h *holders) drop(where, addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, where+" "+addr)
}

func addrOf(t *testing.T, stdout []byte) string {
	res := parseResult(t, stdout)
	if len(res.IPs) != 1 {
		t.Errorf("result %s: want one address", stdout)
		return ""
	}
	return netip.MustParsePrefix(res.IPs[0].Address).Addr().String()
}

// ADD and DEL processes run against a pool directory and a network
// directory while leases, pools, release and fsck (also --repair) run
// against the same directories. No address is ever held twice, every CLI
// run succeeds, and the state ends consistent: fsck finds nothing and
// leases lists exactly the attachments still alive.
func TestOpsConcurrentWithPlugins(t *testing.T) {
	l := newOpsLab(t)
	l.network("10-conc.conflist", "conc", `{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"DATA",
		"pools":[{"name":"cpool","subnet":"10.84.0.0/24"}]}`)
	l.network("20-cstd.conflist", "cstd", `{"type":"ipam-da-pools","dataDir":"DATA","ranges":[[{"subnet":"10.85.0.0/24"}]]}`)
	where := map[string]string{"conc": "pool cpool", "cstd": "network cstd"}
	h := &holders{held: map[string]string{}}
	type leak struct{ network, id, addr string }
	var leaks []leak
	for i := range 8 {
		for _, n := range []string{"conc", "cstd"} {
			id := fmt.Sprintf("leak-%d", i)
			r := l.call("ADD", n, id, "eth0")
			if r.Exit != 0 {
				t.Fatalf("leak ADD: %s", r.Stdout)
			}
			a := addrOf(t, r.Stdout)
			h.take(where[n], a, id)
			leaks = append(leaks, leak{n, id, a})
		}
	}

	const workers, rounds = 4, 20
	live := map[string]string{} // network + id -> address, for the end
	var liveMu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				id := fmt.Sprintf("w%d-%d", w, i)
				for _, n := range []string{"conc", "cstd"} {
					r := l.call("ADD", n, id, "eth0")
					if r.Exit != 0 {
						t.Errorf("ADD %s %s: exit %d %s %s", n, id, r.Exit, r.Stdout, r.Stderr)
						continue
					}
					a := addrOf(t, r.Stdout)
					h.take(where[n], a, id)
					if i%3 == 0 {
						liveMu.Lock()
						live[n+" "+id] = a
						liveMu.Unlock()
						continue
					}
					h.drop(where[n], a)
					if r := l.call("DEL", n, id, "eth0"); r.Exit != 0 {
						t.Errorf("DEL %s %s: exit %d %s", n, id, r.Exit, r.Stdout)
					}
				}
			}
		}()
	}
	done := make(chan struct{})
	var cliWG sync.WaitGroup
	cliWG.Add(1)
	runs := map[string]int{}
	go func() {
		defer cliWG.Done()
		data, conf := "--data-dir="+l.dataDir, "--conf-dir="+l.confDir
		cmds := [][]string{
			{"leases", data, "-o", "json"}, {"pools", conf, "-o", "prom"}, {"fsck", data, conf},
			{"release"}, {"leases", data, "--pool", "cpool"}, {"fsck", data, conf, "--repair"},
		}
		for i := 0; ; i++ {
			select {
			case <-done:
				if i >= len(cmds) {
					return
				}
			default:
			}
			args := cmds[i%len(cmds)]
			if args[0] == "release" {
				if len(leaks) == 0 {
					continue
				}
				lk := leaks[0]
				leaks = leaks[1:]
				h.drop(where[lk.network], lk.addr)
				flag := "--pool=cpool"
				if lk.network == "cstd" {
					flag = "--network=cstd"
				}
				args = []string{"release", data, lk.addr, flag, "--container", lk.id}
			}
			r := cliRun(args...)
			runs[args[0]]++
			if r.Exit != 0 {
				t.Errorf("cniplugins %s during ADD/DEL: exit %d\n%s%s", strings.Join(args, " "), r.Exit, r.Stdout, r.Stderr)
			}
			if args[0] == "leases" && args[2] == "-o" {
				var ls []map[string]any
				if err := json.Unmarshal(r.Stdout, &ls); err != nil {
					t.Errorf("leases -o json during ADD/DEL: %v", err)
				}
			}
		}
	}()
	wg.Wait()
	close(done)
	cliWG.Wait()
	for _, e := range h.errs {
		t.Error(e)
	}
	t.Logf("CLI runs during ADD/DEL: %v", runs)
	for _, c := range []string{"leases", "pools", "fsck", "release"} {
		if runs[c] == 0 {
			t.Errorf("%s never ran while the plugins did", c)
		}
	}

	// The end state: consistent, and exactly the live attachments plus
	// the leaks not released.
	if out := l.cli(0, "fsck", "--data-dir", l.dataDir, "--conf-dir", l.confDir, "--no-headers"); out != "" {
		t.Errorf("fsck at the end:\n%s", out)
	}
	var ls []struct{ Address, Network, Pool, ContainerID string }
	if err := json.Unmarshal([]byte(l.cli(0, "leases", "--data-dir", l.dataDir, "-o", "json")), &ls); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, le := range ls {
		if strings.HasPrefix(le.ContainerID, "leak-") {
			continue
		}
		n := le.Network
		if k := n + " " + le.ContainerID; got[k] != "" {
			t.Errorf("%s holds two addresses: %s and %s", k, got[k], le.Address)
		} else {
			got[k] = le.Address
		}
	}
	if len(got) != len(live) {
		t.Errorf("leases lists %d worker attachments, %d are alive", len(got), len(live))
	}
	for k, a := range live {
		if got[k] != a {
			t.Errorf("%s: leases says %q, its ADD got %s", k, got[k], a)
		}
	}
	for _, lk := range leaks { // not released: still there
		found := false
		for _, le := range ls {
			found = found || (le.ContainerID == lk.id && le.Address == lk.addr)
		}
		if !found {
			t.Errorf("leak %+v vanished without a release", lk)
		}
	}
}
