package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

// fleet is one run: the hosts, the model of who holds what, and what was
// measured.
type fleet struct {
	o      *options
	cl     *etcdtest.Cluster
	binDir string
	tmp    string
	prefix string
	start  time.Time

	mu      sync.Mutex
	owner   map[string]string // address → container ID, as the answers said
	dups    []string
	ops     []opRec
	codes   map[string]int // failures, "ADD code 11" → count
	came    int            // successful ADDs
	samples []sample
	events  []event
	rep     *report
}

type opRec struct {
	cmd     string
	at, dur time.Duration
	ok      bool
}

type sample struct {
	at                   time.Duration
	keys, claims, index  int
	live                 int
	dbSize, dbInUse      int64
	addsSince, delsSince int
	intervalS            float64
	sampleErr            string
	membersUp            int
	phase                int
	fences, nodes, marks int
}

type event struct {
	at   time.Duration
	what string
}

// host is one simulated machine: its node name and machine ID, and a
// context whose cancel kills its processes in flight (the host vanishes).
type host struct {
	name   string
	idFile string
	ctx    context.Context
	kill   context.CancelFunc

	mu       sync.Mutex
	live     map[string]bool // container IDs whose ADD succeeded and that were not DELeted
	inFlight map[string]bool // ADDs running when the host was killed may have committed
	deleting map[string]bool // and DELs running then may have
}

// att is one live attachment.
type att struct {
	cid, addr string
	result    []byte
}

func newFleet(o *options, cl *etcdtest.Cluster, binDir, tmp string) *fleet {
	return &fleet{o: o, cl: cl, binDir: binDir, tmp: tmp, prefix: "/fleet/", owner: map[string]string{}, codes: map[string]int{}}
}

func (f *fleet) now() time.Duration { return time.Since(f.start) }

func (f *fleet) event(format string, args ...any) {
	e := event{at: f.now(), what: fmt.Sprintf(format, args...)}
	logf("%6.1fs %s", e.at.Seconds(), e.what)
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
}

// conf is host h's network configuration, with prevResult when given.
func (f *fleet) conf(h *host, prev []byte) []byte {
	ipam := map[string]any{"type": "ipam-da-etcd", "ranges": [][]map[string]string{{{"subnet": "10.214.0.0/20"}}},
		"etcd": map[string]any{"endpoints": f.cl.Endpoints(), "prefix": f.prefix, "nodeName": h.name, "machineIDFile": h.idFile}}
	c := map[string]any{"cniVersion": "1.1.0", "name": "fleet", "ipam": ipam}
	if prev != nil {
		c["prevResult"] = json.RawMessage(prev)
	}
	b, _ := json.Marshal(c)
	return b
}

// exec runs one CNI command as a runtime does: a process of its own.
func (f *fleet) exec(ctx context.Context, h *host, cmd, cid string, prev []byte) (out []byte, code int, err error) {
	c := exec.CommandContext(ctx, filepath.Join(f.binDir, "ipam-da-etcd"))
	c.Env = []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + cid, "CNI_IFNAME=eth0", "CNI_NETNS=/var/run/netns/" + cid,
		"CNI_PATH=" + f.binDir, "PATH=/usr/bin:/bin"}
	c.Stdin = bytes.NewReader(f.conf(h, prev))
	var stdout bytes.Buffer
	c.Stdout = &stdout
	start := time.Now()
	err = c.Run()
	d := time.Since(start)
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, -1, ctx.Err()
	case errors.As(err, &ee):
		var e struct{ Code int }
		_ = json.Unmarshal(stdout.Bytes(), &e)
		code = e.Code
		err = nil
	case err != nil:
		return nil, -1, err
	}
	f.mu.Lock()
	f.ops = append(f.ops, opRec{cmd: cmd, at: f.now(), dur: d, ok: code == 0})
	if code != 0 {
		f.codes[fmt.Sprintf("%s code %d", cmd, code)]++
	}
	f.mu.Unlock()
	return stdout.Bytes(), code, nil
}

// add ADDs cid on h and records its address in the model, noting a
// duplicate when another live attachment holds it.
func (f *fleet) add(h *host, cid string) (att, bool, error) {
	h.mu.Lock()
	h.inFlight[cid] = true
	h.mu.Unlock()
	out, code, err := f.exec(h.ctx, h, "ADD", cid, nil)
	if err != nil {
		return att{}, false, err // the host was killed: cid stays in flight
	}
	h.mu.Lock()
	delete(h.inFlight, cid)
	h.mu.Unlock()
	if code != 0 {
		// The runtime DELs a failed ADD.
		return att{}, false, f.del(h, att{cid: cid}, false)
	}
	var res struct {
		IPs []struct{ Address string } `json:"ips"`
	}
	if json.Unmarshal(out, &res) != nil || len(res.IPs) != 1 {
		return att{}, false, fmt.Errorf("ADD %s: unexpected result %s", cid, out)
	}
	addr, _, _ := strings.Cut(res.IPs[0].Address, "/")
	f.mu.Lock()
	if other, taken := f.owner[addr]; taken {
		f.dups = append(f.dups, fmt.Sprintf("%s given to %s while %s holds it", addr, cid, other))
	}
	f.owner[addr] = cid
	f.came++
	f.mu.Unlock()
	h.mu.Lock()
	h.live[cid] = true
	h.mu.Unlock()
	return att{cid: cid, addr: addr, result: out}, true, nil
}

// del DELs a until it succeeds, as a runtime retries; twice (with
// prevResult, then without) when again, as containerd sends it. The
// model forgets the address first: no other ADD can get it before the DEL
// commits.
func (f *fleet) del(h *host, a att, again bool) error {
	if a.addr != "" {
		f.mu.Lock()
		if f.owner[a.addr] == a.cid {
			delete(f.owner, a.addr)
		}
		f.mu.Unlock()
	}
	h.mu.Lock()
	h.deleting[a.cid] = true
	h.mu.Unlock()
	prevs := [][]byte{a.result}
	if again && a.result != nil {
		prevs = append(prevs, nil)
	}
	for _, prev := range prevs {
		for try := 0; ; try++ {
			_, code, err := f.exec(h.ctx, h, "DEL", a.cid, prev)
			if err != nil {
				return err
			}
			if code == 0 {
				break
			}
			if try == 50 {
				return fmt.Errorf("DEL %s on %s kept failing (code %d)", a.cid, h.name, code)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	h.mu.Lock()
	delete(h.live, a.cid)
	delete(h.deleting, a.cid)
	h.mu.Unlock()
	return nil
}

// worker churns on h until the deadline: ADD a new attachment, DEL the
// oldest beyond live; then DELs what it holds (the drain), unless the
// host was killed.
func (f *fleet) worker(h *host, w, phase int, until time.Time, seq *int) error {
	var ring []att
	for time.Now().Before(until) && h.ctx.Err() == nil {
		*seq++
		cid := fmt.Sprintf("%s-p%d-w%d-%d", h.name, phase, w, *seq)
		a, ok, err := f.add(h, cid)
		if h.ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if ok {
			ring = append(ring, a)
		}
		if len(ring) > f.o.live {
			if err := f.del(h, ring[0], *seq%4 == 0); err != nil {
				if h.ctx.Err() != nil {
					return nil
				}
				return err
			}
			ring = ring[1:]
		}
	}
	for _, a := range ring {
		if h.ctx.Err() != nil {
			return nil
		}
		if err := f.del(h, a, false); err != nil && h.ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// churn runs every live host's workers for d, then drains them.
func (f *fleet) churn(hosts []*host, phase int, d time.Duration, seqs [][]int) error {
	until := time.Now().Add(d)
	errs := make(chan error, len(hosts)*f.o.workers)
	var wg sync.WaitGroup
	for i, h := range hosts {
		if h.ctx.Err() != nil {
			continue
		}
		for w := range f.o.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := f.worker(h, w, phase, until, &seqs[i][w]); err != nil {
					errs <- fmt.Errorf("%s worker %d: %w", h.name, w, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// sampler samples every o.sample until stop.
func (f *fleet) sampler(stop <-chan struct{}, phase func() int) {
	t := time.NewTicker(f.o.sample)
	defer t.Stop()
	last, lastAdds, lastDels := time.Now(), 0, 0
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s := f.sampleNow()
		f.mu.Lock()
		adds, dels := 0, 0
		for _, op := range f.ops {
			if op.ok && op.cmd == "ADD" {
				adds++
			} else if op.ok && op.cmd == "DEL" {
				dels++
			}
		}
		s.live = len(f.owner)
		s.addsSince, s.delsSince = adds-lastAdds, dels-lastDels
		s.intervalS = time.Since(last).Seconds()
		s.phase = phase()
		f.samples = append(f.samples, s)
		f.mu.Unlock()
		last, lastAdds, lastDels = time.Now(), adds, dels
	}
}

// sampleNow counts the keys under the prefix by kind and reads etcd's
// database size (the largest a running member reports).
func (f *fleet) sampleNow() sample {
	s := sample{at: f.now()}
	count := func(p string) int {
		n, err := f.cl.Count(f.prefix + p)
		if err != nil {
			s.sampleErr = err.Error()
		}
		return n
	}
	s.keys = f.countAll()
	s.claims, s.index, s.fences, s.nodes, s.marks = count("ip/"), count("node/"), count("fences/"), count("nodes/"), count("full/")
	for _, m := range f.cl.Members {
		if !m.Running() {
			continue
		}
		var st struct {
			DBSize      int64 `json:"dbSize,string"`
			DBSizeInUse int64 `json:"dbSizeInUse,string"`
		}
		if f.cl.Post(m, "/v3/maintenance/status", map[string]any{}, &st) == nil {
			s.membersUp++
			s.dbSize, s.dbInUse = max(s.dbSize, st.DBSize), max(s.dbInUse, st.DBSizeInUse)
		}
	}
	return s
}

func (f *fleet) countAll() int {
	n, err := f.cl.Count(f.prefix)
	if err != nil {
		return -1
	}
	return n
}

var releaseLine = regexp.MustCompile(`container (\S+) ifname`)

// cli runs cniplugins-full's operators' command with the cluster's flags.
func (f *fleet) cli(args ...string) (stdout, stderr string, exit int) {
	c := exec.Command(filepath.Join(f.binDir, "cniplugins"), append(args, "--etcd", strings.Join(f.cl.Endpoints(), ","), "--prefix", f.prefix)...)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		exit = -1
	}
	return o.String(), e.String(), exit
}

// listed is the container IDs a gc plan or apply names.
func listed(out string) []string {
	var ids []string
	for _, m := range releaseLine.FindAllStringSubmatch(out, -1) {
		ids = append(ids, m[1])
	}
	slices.Sort(ids)
	return ids
}

func (f *fleet) run() (*report, error) {
	o := f.o
	rep := &report{}
	f.rep = rep
	var hosts []*host
	for i := range o.hosts {
		h := &host{name: fmt.Sprintf("fleet-%02d", i), live: map[string]bool{}, inFlight: map[string]bool{}, deleting: map[string]bool{}}
		h.idFile = filepath.Join(f.tmp, h.name+".machine-id")
		if err := os.WriteFile(h.idFile, []byte(fmt.Sprintf("%032x\n", 0xf1ee7000+i)), 0o600); err != nil {
			return nil, err
		}
		h.ctx, h.kill = context.WithCancel(context.Background())
		defer h.kill()
		hosts = append(hosts, h)
	}
	seqs := make([][]int, len(hosts))
	for i := range seqs {
		seqs[i] = make([]int, o.workers)
	}
	f.start = time.Now()
	phase := 1
	var pmu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.sampler(stop, func() int { pmu.Lock(); defer pmu.Unlock(); return phase })
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	d1 := o.churn / 4
	f.event("phase 1: %d hosts × %d workers, %d live attachments per worker, %v", o.hosts, o.workers, o.live, d1)
	t1 := time.Now()
	if err := f.churn(hosts, 1, d1, seqs); err != nil {
		return nil, err
	}
	rep.churnTime += time.Since(t1)
	f.event("phase 1 drained")
	rep.after = append(rep.after, f.snapshot("after phase 1", len(hosts)))

	pmu.Lock()
	phase = 2
	pmu.Unlock()
	d2 := o.churn - d1
	vanish := hosts[len(hosts)-1]
	var side sync.WaitGroup
	side.Add(1)
	go func() {
		defer side.Done()
		time.Sleep(d2 / 2)
		f.event("host %s killed mid-churn: its processes SIGKILLed, no DEL will ever come", vanish.name)
		vanish.kill()
	}()
	if o.killMember {
		m := f.cl.Members[1]
		side.Add(1)
		go func() {
			defer side.Done()
			time.Sleep(d2 / 3)
			f.event("etcd member %s SIGKILLed", m.Name)
			m.Kill()
			time.Sleep(d2 / 3)
			if err := m.Restart(); err != nil {
				f.event("restarting %s: %v", m.Name, err)
				return
			}
			f.event("etcd member %s restarted", m.Name)
		}()
	}
	f.event("phase 2: %v", d2)
	t2 := time.Now()
	err := f.churn(hosts, 2, d2, seqs)
	side.Wait()
	if err != nil {
		return nil, err
	}
	rep.churnTime += time.Since(t2)
	f.event("phase 2 drained (all hosts but %s)", vanish.name)
	if err := f.cl.WaitReady(30 * time.Second); err != nil {
		return nil, err
	}
	rep.beforeGC = f.snapshot("after phase 2, before the vanished host's gc", len(hosts))

	if err := f.vanished(vanish, rep); err != nil {
		return nil, err
	}
	rep.after = append(rep.after, f.snapshot("after phase 2 and the vanished host's gc", len(hosts)-1))
	close(stop)
	<-done
	f.fill(rep)
	return rep, nil
}

// vanished clears the killed host with docs/etcd.md's procedure: the plan
// first, which must list exactly its attachments (those whose ADD
// succeeded, and possibly those whose ADD was killed in flight); --apply
// refused while the node was seen within --dead-after; then --apply once
// it has been gone that long, which must free them and nothing of a live
// host.
func (f *fleet) vanished(h *host, rep *report) error {
	v := &rep.vanish
	v.node = h.name
	h.mu.Lock()
	for cid := range h.live {
		v.known = append(v.known, cid)
	}
	for cid := range h.inFlight {
		v.inFlight = append(v.inFlight, cid)
	}
	for cid := range h.deleting {
		v.deleting = append(v.deleting, cid)
	}
	h.mu.Unlock()
	slices.Sort(v.known)
	const deadAfter = 10 * time.Second
	out, errOut, exit := f.cli("gc", "--node", h.name)
	if exit != 0 {
		return fmt.Errorf("gc plan: exit %d %s", exit, errOut)
	}
	v.plan = listed(out)
	v.planOK = planMatches(v.plan, v.known, v.inFlight, v.deleting)
	_, errOut, exit = f.cli("gc", "--node", h.name, "--apply", "--dead-after", "24h")
	v.refusedAlive = exit == 1 && strings.Contains(errOut, "seen alive")
	time.Sleep(deadAfter)
	others := f.countAll()
	out, errOut, exit = f.cli("gc", "--node", h.name, "--apply", "--dead-after", deadAfter.String())
	if exit != 0 {
		return fmt.Errorf("gc --apply: exit %d %s", exit, errOut)
	}
	v.applied = listed(out)
	v.applyOK = slices.Equal(v.applied, v.plan)
	left, _, _ := f.cli("leases", "-o", "json")
	v.leasesAfter = strings.Count(left, `"address"`)
	v.keysFreed = others - f.countAll()
	f.event("vanished host %s cleared: plan %d attachments (known %d, in flight %d), applied %d", h.name, len(v.plan), len(v.known), len(v.inFlight), len(v.applied))
	return nil
}

// planMatches: every known attachment listed (but those whose DEL was
// killed in flight, which may have committed), and nothing else but ADDs
// killed in flight (which may have committed too).
func planMatches(plan, known, inFlight, deleting []string) bool {
	for _, k := range known {
		if !slices.Contains(plan, k) && !slices.Contains(deleting, k) {
			return false
		}
	}
	for _, p := range plan {
		if !slices.Contains(known, p) && !slices.Contains(inFlight, p) {
			return false
		}
	}
	return true
}

// snapshot counts the keys by kind once the churn has settled.
func (f *fleet) snapshot(label string, hosts int) snap {
	s := f.sampleNow()
	f.mu.Lock()
	came := f.came
	f.mu.Unlock()
	return snap{label: label, came: came, s: s, hosts: hosts}
}

// fill computes the report's figures from the records.
func (f *fleet) fill(rep *report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rep.samples, rep.events, rep.dups, rep.codes = f.samples, f.events, f.dups, f.codes
	for _, op := range f.ops {
		if !op.ok {
			continue
		}
		switch op.cmd {
		case "ADD":
			rep.adds = append(rep.adds, op.dur)
		case "DEL":
			rep.dels = append(rep.dels, op.dur)
		}
	}
	rep.liveAtEnd = len(f.owner)
}
