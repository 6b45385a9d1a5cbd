package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

// The ipam-da-etcd scenario: the full flavour's ipam-da-etcd against a
// 3-member etcd cluster on loopback (data directories on the bench's file
// system, fsync and all), side by side with the lean ipam-da-pools on an
// empty state directory, plus 2 hosts × 32 concurrent ADDs on one pool.

const etcdHosts, etcdPerHost = 2, 32

// etcdResult is the scenario's measurements.
type etcdResult struct {
	skipped string // why it did not run
	n       int
	samples sideBySide // by subject key
	conc    concResult
	members int
	dataFS  string
}

// etcd subjects' keys in etcdResult.samples.
const (
	eLean = "ipam-da-pools"
	eEtcd = "ipam-da-etcd"
	// eFloor is bench/etcdfloor: start-up plus one small transaction
	// through the project's etcd client, what an etcd-backed plugin
	// cannot avoid.
	eFloor = "etcd floor"
	// ipam-da-etcd with ipam.sticky: a new key per container (the hold
	// created in the claim's transaction), and one key for every
	// container (each ADD takes the hold the last DEL left over).
	eStickyNew  = "ipam-da-etcd sticky, new key"
	eStickyHeld = "ipam-da-etcd sticky, held key"
)

func measureEtcd(o *options, root string, r *results) error {
	res := &etcdResult{samples: sideBySide{}}
	r.etcd = res
	if err := etcdtest.Available(); err != nil {
		res.skipped = err.Error()
		r.note("ipam-da-etcd scenario skipped: " + res.skipped)
		return nil
	}
	fullDir := filepath.Join(o.tmp, "full-bin")
	buildDir := filepath.Join(o.tmp, "build-full")
	if err := testkit.MakeIn(buildDir, []string{"VERSION=" + r.bins.version}, "cniplugins-full", "etcdfloor"); err != nil {
		return err
	}
	if err := testkit.Install(filepath.Join(buildDir, "cniplugins-full"), fullDir); err != nil {
		return err
	}
	o.logf("etcd: starting a 3-member cluster under %s", o.tmp)
	cl, err := etcdtest.Start(etcdtest.Options{Dir: filepath.Join(o.tmp, "etcd")})
	if err != nil {
		return err
	}
	defer cl.Stop()
	res.members, res.dataFS = len(cl.Members), r.fs.fsType

	lean := subject{key: eLean, label: eLean, path: filepath.Join(r.bins.cniDir, "ipam-da-pools"), cniPath: r.bins.cniDir,
		ipam: rangesIPAM("ipam-da-pools"), stateDir: networkDir}
	etcdSub := func(prefix, node string) subject {
		ipam := rangesIPAM("ipam-da-etcd")
		ipam["etcd"] = map[string]any{"endpoints": cl.Endpoints(), "prefix": prefix, "nodeName": node}
		return subject{key: eEtcd, label: eEtcd, path: filepath.Join(fullDir, "ipam-da-etcd"), cniPath: fullDir,
			ipam: ipam, stateDir: func(string) string { return "" }}
	}
	floor := etcdSub("/bench/floor/", "bench-a")
	floor.key, floor.label, floor.path = eFloor, eFloor, filepath.Join(buildDir, "etcdfloor")
	subs := []subject{lean, etcdSub("/bench/latency/", "bench-a"), floor}
	for _, key := range []string{eStickyNew, eStickyHeld} {
		st := etcdSub("/bench/latency/", "bench-a")
		st.key, st.label = key, key
		st.ipam["sticky"] = map[string]any{"by": []string{"arg"}, "holdFor": "30m"}
		subs = append(subs, st)
	}
	dataDir := filepath.Join(o.tmp, "etcd-lean")
	res.n = o.n
	o.logf("etcd: latency, n=%d, ipam-da-pools and ipam-da-etcd alternating", o.n)
	keys := make([]string, len(subs))
	byKey := map[string]subject{}
	for i, s := range subs {
		keys[i], byKey[s.key] = s.key, s
	}
	err = alternate(keys, max(1, o.warmup), o.n, res.samples, func(key string, i int, tag string) ([2]outcome, error) {
		return stickyAddDel(byKey[key], dataDir, fmt.Sprintf("etcd-%s-%d", tag, i))
	})
	if err != nil {
		return err
	}
	o.logf("etcd: %d hosts × %d concurrent ADDs, %d rounds", etcdHosts, etcdPerHost, o.concRounds)
	for round := 0; round < o.concRounds; round++ {
		prefix := fmt.Sprintf("/bench/conc-%d/", round)
		var hosts []subject
		for h := 0; h < etcdHosts; h++ {
			hosts = append(hosts, etcdSub(prefix, fmt.Sprintf("bench-host-%d", h)))
		}
		res.conc.runs = append(res.conc.runs, etcdBurst(hosts, dataDir, round))
	}
	return nil
}

// stickyAddDel is addDel, with the sticky subjects' key in CNI_ARGS.
func stickyAddDel(s subject, dataDir, tag string) ([2]outcome, error) {
	var key string
	switch s.key {
	case eStickyNew:
		key = tag
	case eStickyHeld:
		key = "held"
	default:
		return addDel(s, dataDir, tag)
	}
	env := []string{"CNI_ARGS=CNIPLUGINS_STICKY_KEY=" + key}
	cid := containerID(tag + "-" + s.key)
	c := s.call("ADD", cid, dataDir, nil)
	c.env = env
	a, err := mustRun(c)
	if err != nil {
		return [2]outcome{}, err
	}
	c = s.call("DEL", cid, dataDir, a.stdout)
	c.env = env
	d, err := mustRun(c)
	if err != nil {
		return [2]outcome{}, err
	}
	return [2]outcome{a, d}, nil
}

// etcdBurst starts every host's ADDs at once, each its own process.
func etcdBurst(hosts []subject, dataDir string, round int) concRun {
	ops := len(hosts) * etcdPerHost
	outs := make([]outcome, ops)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < ops; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := hosts[i%len(hosts)]
			outs[i] = run(s.call("ADD", containerID(fmt.Sprintf("etcd-conc-%d-%d", round, i)), dataDir, nil))
		}()
	}
	wg.Wait()
	return tally(outs, time.Since(start))
}

// failure is non-empty when a burst handed out an address twice or an
// ADD failed.
func (e *etcdResult) failure() string {
	if e == nil || e.skipped != "" || e.conc.ok(etcdHosts*etcdPerHost) {
		return ""
	}
	return "ipam-da-etcd: " + e.conc.describe(etcdHosts*etcdPerHost)
}

// markdown is the scenario's section of RESULTS.md.
func (e *etcdResult) markdown(nproc string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## ipam-da-etcd against a 3-member etcd cluster\n\n")
	if e.skipped != "" {
		w("Not measured: %s.\n\n", e.skipped)
		return b.String()
	}
	w("The full flavour's ipam-da-etcd (etcd's v3 JSON gateway, HTTP/1.1 on the client's own connections) and the lean ipam-da-pools, taking turns, each ADD of a fresh container followed by its DEL (prevResult = the ADD's result); etcd: %d members on 127.0.0.1, data directories on %s (every write fsync'd by etcd), one /16 range set. Median / p99 in ms, n = %d.\n\n", e.members, e.dataFS, e.n)
	w("The etcd floor (bench/etcdfloor) is what an etcd-backed plugin cannot avoid: a Go process that reads its config, opens one connection through the project's etcd client and sends one small transaction (a comparison and a put, or for DEL a delete, of one key: one raft commit, fsync'd on the members), then prints a fixed result.\n\n")
	w("| op | ipam-da-pools | etcd floor | ipam-da-etcd | floor ÷ ipam-da-pools | ipam-da-etcd ÷ floor | ipam-da-etcd ÷ ipam-da-pools | target ≤ 2× |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	var unreachable []string
	for _, op := range latencyOps {
		rt, rf := e.samples.ratio(eEtcd, eLean, op), e.samples.ratio(eFloor, eLean, op)
		w("| %s | %s | %s | %s | %s | %s | %s | %s |\n", op, e.samples.cell(eLean, op), e.samples.cell(eFloor, op), e.samples.cell(eEtcd, op),
			fmtRatio(rf), fmtRatio(e.samples.ratio(eEtcd, eFloor, op)), fmtRatio(rt), metCell(rt <= 2))
		if rf > 2 {
			unreachable = append(unreachable, fmt.Sprintf("%s (floor = %s ipam-da-pools)", op, fmtRatio(rf)))
		}
	}
	if len(unreachable) > 0 {
		w("\n**The 2× target is not reachable on this machine for %s**: the floor alone, one commit on this disk, is above 2× ipam-da-pools.\n", strings.Join(unreachable, ", "))
	}
	w("\nWith ipam.sticky (by CNI_ARGS %s), the same ADD/DEL: a new key per container, and one key for all (each ADD takes over the hold the last DEL left). Median / p99 in ms.\n\n", "CNIPLUGINS_STICKY_KEY")
	w("| op | ipam-da-etcd | sticky, new key | ÷ off | target ≤ 1.05× | sticky, held key | ÷ off |\n| --- | ---: | ---: | ---: | --- | ---: | ---: |\n")
	for _, op := range latencyOps {
		rn, rh := e.samples.ratio(eStickyNew, eEtcd, op), e.samples.ratio(eStickyHeld, eEtcd, op)
		target := "(ADD only)"
		if op == "ADD" {
			target = metCell(rn <= 1.05)
		}
		w("| %s | %s | %s | %s | %s | %s | %s |\n", op, e.samples.cell(eEtcd, op), e.samples.cell(eStickyNew, op), fmtRatio(rn), target, e.samples.cell(eStickyHeld, op), fmtRatio(rh))
	}
	w("\nA new key's ADD is the plain ADD's one round trip (the hold is written in the claim's transaction). A held key's ADD is two, the floor for a cluster-wide hold: the first transaction, the same as a new key's, finds the hold, and the held address is only known from it, while a claim must name its address (docs/etcd.md, Sticky addresses).\n")
	ops := etcdHosts * etcdPerHost
	w("\n%d hosts × %d concurrent ADDs (%d processes started at once, distinct node names, one pool), %d rounds: ", etcdHosts, etcdPerHost, ops, len(e.conc.runs))
	status := "all distinct, none failed"
	if !e.conc.ok(ops) {
		status = "FAILED: " + e.conc.describe(ops)
	}
	w("%s; median wall %s ms = **%.0f ADDs/s**; CPU per ADD %s ms (on %s CPUs).\n\n", status,
		num(benchstat.MS(e.conc.medianWall())), e.conc.opsPerSec(ops), num(benchstat.MS(e.conc.perOp(ops, func(c concRun) time.Duration { return c.cpu }))), nproc)
	return b.String()
}
