package etcd

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// TestChaos runs hosts × workers against the cluster through a fault
// proxy per member, exec'ing the real binary as runtimes do: ADD (some
// with a requested address), DEL with prevResult then again without (as
// containerd sends it), re-ADD of a container deleted before, CHECK,
// STATUS and GC, while the proxies delay requests and answers, lose
// answers, deliver late copies of writes and refuse with "raft proposal
// dropped" and "no leader", and members are SIGSTOPped and SIGKILLed.
// A model built from the plugin's successful answers checks:
//
//   - never one address for two live attachments (at every ADD's answer,
//     and against etcd's keys once quiet);
//   - every failure is one CNI error with a code documented for it;
//   - once the faults stop, every live attachment's CHECK passes;
//   - once every DEL succeeded, no claim and no index key is left (the
//     releases' fences aside), before any GC.
//
// -chaos.time (default 40s) is how long the faults last, per seed; the
// seed is printed, -chaos.seeds=N replays one, -chaos.seeds=a,b,c runs
// several one after the other. `make chaos` runs it longer.
func TestChaos(t *testing.T) {
	needCluster(t)
	seeds := []uint64{uint64(time.Now().UnixNano())}
	if *chaosSeeds != "" {
		seeds = nil
		for _, f := range strings.Split(*chaosSeeds, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("-chaos.seeds=%q: %v", *chaosSeeds, err)
			}
			seeds = append(seeds, n)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			needCluster(t)
			t.Logf("chaos seed %d (replay: go test ./test/etcd -run TestChaos -chaos.seeds=%d -chaos.time=%v), faults for %v", seed, seed, *chaosTime, *chaosTime)
			newChaos(t, seed).run(*chaosTime)
		})
	}
}

var (
	chaosTime  = flag.Duration("chaos.time", 40*time.Second, "chaos test: how long faults last, per seed")
	chaosSeeds = flag.String("chaos.seeds", "", "chaos test: the seeds to run, comma-separated (default: one from the clock)")
)

const (
	chaosHosts     = 3
	chaosWorkers   = 2
	chaosMaxLive   = 5 // per worker
	chaosTimeout   = 3 * time.Second
	chaosTries     = 40 // a runtime's retries of a DEL, once quiet
	chaosSubnet    = "10.214.70.0/26"
	chaosFirstHost = 2 // the pool's addresses: .2 (after the gateway) to .62
)

// allowed are the codes cmd may fail with (docs/etcd.md): 11 for etcd
// unreachable, without quorum or a write's unknown outcome; ADD's 100
// (pool full) and 101 (requested address taken); STATUS's 50.
func allowed(cmd string) []uint {
	switch cmd {
	case "ADD":
		return []uint{11, 100, 101}
	case "STATUS":
		return []uint{11, 50}
	}
	return []uint{11}
}

type chaos struct {
	t     *testing.T
	rng   *rand.Rand
	rngMu sync.Mutex
	ps    []*faultProxy
	hosts []chaosHost

	mu         sync.Mutex
	holders    map[netip.Addr]*att // the model: who holds each address
	ops, oks   map[string]int
	codes      map[string]int // "CMD code" → count
	faults     map[string]int
	slowestADD time.Duration
	violations []string
}

type chaosHost struct {
	h    host
	conf []byte
	gc   *sync.RWMutex // ADDs in flight hold it shared, GC exclusive: a runtime lists what it is adding
	mu   *sync.Mutex
	atts map[string]*att // every attachment of the host not yet DELeted for good
}

// att is one attachment as the runtime knows it.
type att struct {
	cid    string
	result []byte       // the successful ADD's answer
	addrs  []netip.Addr // live: the model holds them
	live   bool         // the ADD succeeded and no DEL was sent since
}

func newChaos(t *testing.T, seed uint64) *chaos {
	c := &chaos{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), holders: map[netip.Addr]*att{},
		ops: map[string]int{}, oks: map[string]int{}, codes: map[string]int{}, faults: map[string]int{}}
	c.ps = proxies(t)
	for i := range chaosHosts {
		h := newHost(t, fmt.Sprintf("chaos-%d", i))
		c.hosts = append(c.hosts, chaosHost{h: h, conf: through(t, h, urls(c.ps...), chaosTimeout.String(), sharedPool(chaosSubnet)),
			gc: &sync.RWMutex{}, mu: &sync.Mutex{}, atts: map[string]*att{}})
	}
	return c
}

func (c *chaos) intn(n int) int {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.rng.IntN(n)
}

func (c *chaos) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.intn(int(hi-lo)/int(time.Millisecond)))*time.Millisecond
}

func (c *chaos) count(m map[string]int, k string) {
	c.mu.Lock()
	m[k]++
	c.mu.Unlock()
}

func (c *chaos) violation(format string, args ...any) {
	c.mu.Lock()
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// proxyFault picks a one-off fault for a request, or none.
func (c *chaos) proxyFault(r request) *rule {
	write := r.txn() && (r.puts() || r.deletes())
	n := c.intn(1000)
	var f *rule
	switch {
	case n < 40:
		f = &rule{kind: delay, d: c.between(50*time.Millisecond, time.Second)}
	case n < 70:
		f = &rule{kind: slowAnswer, d: c.between(50*time.Millisecond, time.Second)}
	case n < 100:
		f = &rule{kind: loseAnswer}
	case n < 150 && write:
		f = &rule{kind: late, d: c.between(200*time.Millisecond, 4*time.Second)}
	case n < 170:
		f = &rule{kind: answerOwn, status: 500, body: gatewayError(2, "raft proposal dropped")}
	case n < 190:
		f = &rule{kind: answerOwn, status: 503, body: gatewayError(14, "etcdserver: no leader")}
	default:
		return nil
	}
	c.count(c.faults, faultNames[f.kind])
	return f
}

var faultNames = map[faultKind]string{delay: "delayed request", slowAnswer: "delayed answer", loseAnswer: "lost answer",
	late: "late copy", answerOwn: "refusal"}

func (c *chaos) run(d time.Duration) {
	t := c.t
	for _, p := range c.ps {
		p.setChaos(c.proxyFault)
	}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.memberFaults(deadline) }()
	for h := range c.hosts {
		for w := range chaosWorkers {
			wg.Add(1)
			go func() { defer wg.Done(); c.worker(h, w, deadline) }()
		}
	}
	wg.Wait()

	// Quiet: no proxy fault, every member running, late copies delivered.
	for _, p := range c.ps {
		p.setChaos(nil)
	}
	for _, m := range cluster.Members {
		_ = m.Resume()
	}
	needCluster(t)
	c.report()

	// The runtime's DELs of failed ADDs and failed DELs, until they succeed.
	for h := range c.hosts {
		for _, a := range c.hosts[h].atts {
			if !a.live {
				c.delUntilDone(h, a)
			}
		}
	}
	// Every live attachment checks out, and etcd's claims are the model's.
	claims, err := cluster.Values(prefix(t) + "ip/")
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for h := range c.hosts {
		for _, a := range c.hosts[h].atts {
			live++
			c.checkQuiet(h, a)
			for _, ip := range a.addrs {
				k := prefix(t) + "ip/pool/shared/" + ip.String()
				if !strings.Contains(claims[k], fmt.Sprintf(`"containerID":%q`, a.cid)) {
					c.violation("%s is live on %s, etcd's claim says %q", a.cid, ip, claims[k])
				}
				delete(claims, k)
			}
		}
	}
	for k, v := range claims {
		c.violation("claim %s = %s held by no live attachment", k, v)
	}
	// DEL every live attachment: then nothing is left, before any GC.
	for h := range c.hosts {
		for _, a := range c.hosts[h].atts {
			c.delUntilDone(h, a)
		}
	}
	if ks := keys(t); len(ks) > 0 {
		c.violation("%d keys left after every DEL succeeded: %v", len(ks), ks)
	}
	t.Logf("once quiet: %d live attachments checked and deleted", live)
	for _, v := range c.violations {
		t.Error(v)
	}
}

// memberFaults stops (SIGSTOP) or kills (SIGKILL) one member at a time
// for a second or three, until deadline.
func (c *chaos) memberFaults(deadline time.Time) {
	for time.Now().Before(deadline) {
		time.Sleep(c.between(time.Second, 4*time.Second))
		m := cluster.Members[c.intn(len(cluster.Members))]
		pause := c.intn(2) == 0
		kind := "member SIGKILL and restart"
		if pause {
			kind = "member SIGSTOP and SIGCONT"
			if m.Pause() != nil {
				continue
			}
		} else {
			m.Kill()
		}
		c.count(c.faults, kind)
		time.Sleep(c.between(500*time.Millisecond, 3*time.Second))
		if pause {
			_ = m.Resume()
		} else if err := m.Restart(); err != nil {
			c.violation("restart %s: %v", m.Name, err)
			return
		}
		_ = cluster.WaitReady(30 * time.Second)
	}
}

// worker is one of a host's runtime workers: it picks a command for its
// own attachments until deadline.
func (c *chaos) worker(h, w int, deadline time.Time) {
	var mine []*att // this worker's attachments, the host's registry holds them too
	var gone []string
	n := 0
	for time.Now().Before(deadline) {
		time.Sleep(c.between(20*time.Millisecond, 120*time.Millisecond)) // modest load: the machine runs etcd too
		var live, dying []*att
		for _, a := range mine {
			if a.live {
				live = append(live, a)
			} else {
				dying = append(dying, a)
			}
		}
		switch x := c.intn(100); {
		case len(dying) > 0 && x < 30:
			c.del(h, dying[c.intn(len(dying))])
		case x < 45 && len(live) < chaosMaxLive:
			n++
			mine = append(mine, c.add(h, fmt.Sprintf("h%dw%dc%d", h, w, n)))
		case x < 52 && len(gone) > 0 && len(live) < chaosMaxLive:
			i := c.intn(len(gone))
			mine = append(mine, c.add(h, gone[i]))
			gone = slices.Delete(gone, i, i+1)
		case x < 75 && len(live) > 0:
			c.del(h, live[c.intn(len(live))])
		case x < 87 && len(live) > 0:
			a := live[c.intn(len(live))]
			c.exec(h, "CHECK", a.cid, withPrev(c.t, c.hosts[h].conf, a.result))
		case x < 94:
			c.exec(h, "STATUS", "", c.hosts[h].conf)
		case x < 97 && w == 0:
			c.gc(h)
		}
		// DELeted for good: the host forgets it, the worker may ADD it again.
		mine = slices.DeleteFunc(mine, func(a *att) bool {
			hs := c.hosts[h]
			hs.mu.Lock()
			defer hs.mu.Unlock()
			if _, ok := hs.atts[a.cid]; !ok {
				gone = append(gone, a.cid)
				return true
			}
			return false
		})
	}
}

// exec runs one command and checks a failure's code.
func (c *chaos) exec(h int, cmd, cid string, conf []byte) testbin.Reply {
	args := ""
	if cmd == "ADD" && c.intn(5) == 0 {
		args = fmt.Sprintf("IP=10.214.70.%d", chaosFirstHost+c.intn(60))
	}
	start := time.Now()
	r := call("ipam-da-etcd", cmd, cid, conf, args)
	took := time.Since(start)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops[cmd]++
	if r.Exit == 0 {
		c.oks[cmd]++
		if cmd == "ADD" && took > c.slowestADD {
			c.slowestADD = took
		}
		return r
	}
	e := r.Err()
	if e == nil || !slices.Contains(allowed(cmd), e.Code) {
		c.violations = append(c.violations, fmt.Sprintf("%s %s: exit %d, stdout %q: not one CNI error with a code documented for %s %v",
			cmd, cid, r.Exit, r.Stdout, cmd, allowed(cmd)))
		return r
	}
	c.codes[fmt.Sprintf("%s %d", cmd, e.Code)]++
	return r
}

// add ADDs cid on host h; on success the model takes its addresses (no
// other live attachment may hold one), on failure the runtime owes it a
// DEL.
func (c *chaos) add(h int, cid string) *att {
	hs := c.hosts[h]
	a := &att{cid: cid}
	hs.mu.Lock()
	hs.atts[cid] = a
	hs.mu.Unlock()
	hs.gc.RLock()
	r := c.exec(h, "ADD", cid, hs.conf)
	hs.gc.RUnlock()
	if r.Exit != 0 {
		return a
	}
	var res struct {
		IPs []struct{ Address string } `json:"ips"`
	}
	_ = json.Unmarshal(r.Stdout, &res)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ip := range res.IPs {
		p, err := netip.ParsePrefix(ip.Address)
		if err != nil {
			c.violations = append(c.violations, fmt.Sprintf("ADD %s: address %q", cid, ip.Address))
			continue
		}
		if other := c.holders[p.Addr()]; other != nil && other.live {
			c.violations = append(c.violations, fmt.Sprintf("ADD %s got %s, which live attachment %s holds", cid, p.Addr(), other.cid))
		}
		c.holders[p.Addr()] = a
		a.addrs = append(a.addrs, p.Addr())
	}
	a.result, a.live = r.Stdout, true
	return a
}

// del sends a's DEL, with prevResult when the ADD succeeded, then again
// without (containerd's second DEL); once both succeed, the host forgets
// it. From the first DEL on, its addresses may be free: the model no
// longer counts them live.
func (c *chaos) del(h int, a *att) bool {
	hs := c.hosts[h]
	c.mu.Lock()
	a.live = false
	c.mu.Unlock()
	conf := hs.conf
	if a.result != nil {
		conf = withPrev(c.t, hs.conf, a.result)
	}
	if c.exec(h, "DEL", a.cid, conf).Exit != 0 || c.exec(h, "DEL", a.cid, hs.conf).Exit != 0 {
		return false
	}
	c.mu.Lock()
	for _, ip := range a.addrs {
		if c.holders[ip] == a {
			delete(c.holders, ip)
		}
	}
	c.mu.Unlock()
	hs.mu.Lock()
	delete(hs.atts, a.cid)
	hs.mu.Unlock()
	return true
}

// checkQuiet is CHECK of a live attachment once the faults stopped: it
// passes. A loaded machine's etcd may still miss a deadline (11): the
// runtime tries again; any other failure is a violation.
func (c *chaos) checkQuiet(h int, a *att) {
	for range chaosTries {
		r := call("ipam-da-etcd", "CHECK", a.cid, withPrev(c.t, c.hosts[h].conf, a.result), "")
		if r.Exit == 0 {
			return
		}
		if e := r.Err(); e == nil || e.Code != 11 {
			c.violation("CHECK of live %s once quiet: %s", a.cid, r.Stdout)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.violation("CHECK %s failed %d times with 11 once quiet", a.cid, chaosTries)
}

func (c *chaos) delUntilDone(h int, a *att) {
	for range chaosTries {
		if c.del(h, a) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.violation("DEL %s failed %d times once quiet", a.cid, chaosTries)
}

// gc sends host h's GC listing every attachment it knows, while no ADD
// of it is in flight.
func (c *chaos) gc(h int) {
	hs := c.hosts[h]
	hs.gc.Lock()
	defer hs.gc.Unlock()
	hs.mu.Lock()
	var valid []string
	for cid := range hs.atts {
		valid = append(valid, cid)
	}
	hs.mu.Unlock()
	c.exec(h, "GC", "", gcConf(c.t, hs.conf, valid...))
}

// report logs the run's figures.
func (c *chaos) report() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	total := 0
	for _, cmd := range []string{"ADD", "DEL", "CHECK", "STATUS", "GC"} {
		total += c.ops[cmd]
		fmt.Fprintf(&b, "\n  %-6s %5d sent, %5d succeeded", cmd, c.ops[cmd], c.oks[cmd])
	}
	fmt.Fprintf(&b, "\n  failures by code: %v\n  faults injected: %v\n  slowest successful ADD: %v", c.codes, c.faults, c.slowestADD.Round(time.Millisecond))
	c.t.Logf("chaos: %d commands from %d hosts × %d workers:%s", total, chaosHosts, chaosWorkers, b.String())
}
