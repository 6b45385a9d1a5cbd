package etcd

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// These tests put a faultProxy in front of each member and run the real
// binary through them: what ipam-da-etcd promises when etcd has a bad
// day (docs/etcd.md, "Timeouts and late commits").

// nodeFirst is a node name whose commands try endpoint i of n first
// (the client spreads nodes over members by a hash of the name).
func nodeFirst(base string, i, n int) string {
	for k := 0; ; k++ {
		name := fmt.Sprintf("%s-%d", base, k)
		h := fnv.New32a()
		h.Write([]byte(name))
		if int(h.Sum32()%uint32(n)) == i {
			return name
		}
	}
}

// through is a pool config whose etcd endpoints are eps.
func through(t *testing.T, h host, eps []string, timeout string, pools []map[string]any) []byte {
	return poolConf(t, h, pools, map[string]any{"endpoints": eps, "timeout": timeout})
}

func claimPut(r request) bool { return r.txn() && r.putsUnder("/ip/") }

// TestLateDelCopy (item 1): the first copy of a DEL is held on its way to
// a member and delivered only after the DEL was retried and succeeded and
// the same container and interface were ADDed again, to the same address.
// The late copy must delete nothing: the new claim is newer than the DEL.
func TestLateDelCopy(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	h := newHost(t, nodeFirst("late-del", 0, 3))
	conf := through(t, h, urls(ps...), "2s", sharedPool("10.214.40.0/24"))
	r1, a1 := mustAdd(t, "c1", conf)
	held := ps[0].on(func(r request) bool { return r.txn() && r.deletes() }, hold, 1)
	mustRun(t, "DEL", "c1", withPrev(t, conf, r1.Stdout))
	waitFor(t, held.arrived, 5*time.Second, "the DEL's first copy")
	wantNoKeys(t)

	r2, a2 := mustAdd(t, "c1", conf)
	if a2[0] != a1[0] {
		t.Fatalf("the second ADD got %s, not %s: the start address is hashed from the attachment, this test needs the same one", a2[0], a1[0])
	}
	close(held.release)
	waitFor(t, held.applied, 5*time.Second, "the late copy's delivery")
	if ks := keys(t); len(ks) != 2 {
		t.Fatalf("after the late DEL copy: %v, want the new claim and its index key", ks)
	}
	mustRun(t, "CHECK", "c1", withPrev(t, conf, r2.Stdout))
	mustRun(t, "DEL", "c1", withPrev(t, conf, r2.Stdout))
	wantNoKeys(t)
}

// TestUnansweredClaimIsFenced: a claim whose answer is lost is not sent
// again and does not fail the ADD either: a marker through another
// member fences it, the ADD takes its own marker over, and the copy in
// flight, delivered late, can claim nothing.
func TestUnansweredClaimIsFenced(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	h := newHost(t, nodeFirst("fence", 0, 3))
	conf := through(t, h, urls(ps...), "2s", sharedPool("10.214.41.0/24"))
	mustRun(t, "STATUS", "", conf) // the node's record, so that the ADD's first write is its claim
	held := ps[0].on(claimPut, hold, 1)
	r, a := mustAdd(t, "c1", conf)
	waitFor(t, held.arrived, time.Second, "the claim's first copy")
	close(held.release)
	waitFor(t, held.applied, 5*time.Second, "the late copy's delivery")
	ks := keys(t)
	if len(ks) != 2 || !strings.HasSuffix(ks[0], "/"+a[0].String()) {
		t.Fatalf("keys %v, want %s's claim and its index key only", ks, a[0])
	}
	claims := 0
	for _, p := range ps {
		claims += len(p.requests(claimPut))
	}
	if claims != 2 {
		t.Errorf("%d claims sent, want 2: the lost one (never re-sent) and the one over the fence", claims)
	}
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	wantNoKeys(t)
}

// TestTwoMachinesOneNodeName (item 2): a second machine under a node name
// that another machine uses is refused by ADD, STATUS and GC, with an
// error naming both, and frees nothing of the first's.
func TestTwoMachinesOneNodeName(t *testing.T) {
	needCluster(t)
	dir := t.TempDir()
	ids := map[string]string{}
	for name, id := range map[string]string{"one": "0123456789abcdef0123456789abcdef", "two": "fedcba9876543210fedcba9876543210"} {
		ids[name] = filepath.Join(dir, name)
		if err := os.WriteFile(ids[name], []byte(id+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := newHost(t, "twin")
	pools := sharedPool("10.214.42.0/24")
	one := poolConf(t, h, pools, map[string]any{"machineIDFile": ids["one"]})
	two := poolConf(t, h, pools, map[string]any{"machineIDFile": ids["two"]})
	r, _ := mustAdd(t, "c1", one)
	machines := regexp.MustCompile(`machine ([0-9a-f]{32})`)
	for _, cmd := range []string{"ADD", "STATUS", "GC"} {
		conf := two
		if cmd == "GC" {
			conf = gcConf(t, two)
		}
		e := wantCode(t, run1(cmd, "c2", conf), 7)
		m := machines.FindAllStringSubmatch(e.Details, -1)
		if len(m) != 2 || m[0][1] == m[1][1] || !strings.Contains(e.Details, `nodeName="twin"`) {
			t.Errorf("%s from the second machine: %s (%s), want both machines named", cmd, e.Msg, e.Details)
		}
	}
	if ks := keys(t); len(ks) != 2 {
		t.Fatalf("keys %v: the first machine's claim must stand", ks)
	}
	mustRun(t, "CHECK", "c1", withPrev(t, one, r.Stdout))
	mustRun(t, "GC", "", gcConf(t, one, "c1"))
	mustRun(t, "DEL", "c1", withPrev(t, one, r.Stdout))
	wantNoKeys(t)
}

// TestRefusedBeforeProposalFailsOver (item 3): a member that answers
// "raft proposal dropped" (a leadership transfer) or that it is a learner
// has not applied the request: every command goes on to the next member
// and succeeds.
func TestRefusedBeforeProposalFailsOver(t *testing.T) {
	needCluster(t)
	for i, refusal := range []struct {
		status int
		body   string
	}{
		{500, gatewayError(2, "raft proposal dropped")},
		{400, gatewayError(9, "etcdserver: rpc not supported for learner")},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			ps := proxies(t)
			ps[0].on(func(r request) bool { return r.txn() }, answerOwn, 0).answering(refusal.status, refusal.body)
			h := newHost(t, nodeFirst("refused", 0, 3))
			conf := through(t, h, urls(ps...), "2s", sharedPool(fmt.Sprintf("10.214.%d.0/24", 43+i)))
			mustRun(t, "STATUS", "", conf)
			r, _ := mustAdd(t, "c1", conf)
			mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
			if n := len(ps[0].requests(nil)); n == 0 {
				t.Fatal("member 0 was never tried: the test proves nothing")
			}
			wantNoKeys(t)
		})
	}
}

// TestSlowClusterIsWaitedFor (item 6): every answer takes 1.5 s (fsync
// stalls), the timeout is 5 s: each command succeeds, and no write is
// sent twice.
func TestSlowClusterIsWaitedFor(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	for _, p := range ps {
		p.on(func(request) bool { return true }, delay, 0).after(1500 * time.Millisecond)
	}
	h := newHost(t, "slow")
	direct := poolConf(t, h, sharedPool("10.214.45.0/24"), nil)
	mustRun(t, "STATUS", "", direct) // the node's record first: one slow round trip per command below
	conf := through(t, h, urls(ps...), "5s", sharedPool("10.214.45.0/24"))
	r, _ := mustAdd(t, "c1", conf)
	mustRun(t, "STATUS", "", conf)
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	writes := 0
	for _, p := range ps {
		writes += len(p.requests(func(r request) bool { return r.txn() && (r.puts() || r.deletes()) }))
	}
	if writes != 2 {
		t.Errorf("%d writes sent, want 2 (the claim, the DEL): a slow answer is waited for, not sent again", writes)
	}
	wantNoKeys(t)
}

// TestFailsFastWhenFullOrTooLarge (item 8): NOSPACE and an answer over the
// gateway's limit are definite: one try, and an error that says so.
func TestFailsFastWhenFullOrTooLarge(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	for _, p := range ps {
		p.on(claimPut, answerOwn, 0).answering(500, gatewayError(8, "etcdserver: mvcc: database space exceeded"))
		p.on(func(r request) bool { return r.Path == "/v3/kv/range" }, answerOwn, 0).
			answering(500, gatewayError(8, "grpc: received message larger than max (5242880 vs. 4194304)"))
	}
	h := newHost(t, "full")
	conf := through(t, h, urls(ps...), "5s", sharedPool("10.214.46.0/24"))
	mustRun(t, "STATUS", "", conf)
	e := wantCode(t, run1("ADD", "c1", conf), 5)
	if !strings.Contains(e.Msg+e.Details, "database space exceeded") {
		t.Errorf("NOSPACE: %s (%s)", e.Msg, e.Details)
	}
	claims := 0
	for _, p := range ps {
		claims += len(p.requests(claimPut))
	}
	if claims != 1 {
		t.Errorf("%d claims sent, want 1: NOSPACE is not retried", claims)
	}
	lr := cliThrough(t, urls(ps...), "leases", "--node", "full")
	if lr.Exit == 0 || !strings.Contains(string(lr.Stderr), "too large") {
		t.Errorf("leases over an answer too large: exit %d %s", lr.Exit, lr.Stderr)
	}
	wantNoKeys(t)
}

// TestFailedADDReplacesTheMarkerItTookOver (item 10): an ADD takes over a
// failed ADD's marker; its claim is held on the way, the fence is
// refused, the ADD fails and undoes. The undo must replace the marker the
// claim was conditioned on, so the claim, delivered late, cannot commit.
func TestFailedADDReplacesTheMarkerItTookOver(t *testing.T) {
	needCluster(t)
	ps := proxies(t)[:2]
	h := newHost(t, nodeFirst("marker", 0, 2))
	conf := through(t, h, urls(ps...), "2s", sharedPool("10.214.47.0/24"))
	mustRun(t, "STATUS", "", conf)
	slot := prefix(t) + "node/" + h.node + "/pool/shared/c1/eth0/0"
	old := fmt.Sprintf(`{"node":%q,"containerID":"c1","ifname":"eth0","network":"etcd-net","pool":"shared","time":"2026-01-01T00:00:00.000000000Z","claim":"old"}`, h.node)
	if err := cluster.Post(cluster.Members[0], "/v3/kv/put", map[string]any{"key": []byte(slot), "value": []byte(old)}, nil); err != nil {
		t.Fatal(err)
	}
	// The ADD's first claim finds the marker; its second, conditioned on
	// the marker, is the one held.
	held := ps[0].on(func(r request) bool { return claimPut(r) && r.takesOver() }, hold, 1)
	ps[1].on(func(r request) bool { return r.txn() && r.putsUnder("/node/") && !r.putsUnder("/ip/") }, answerOwn, 1).
		answering(400, gatewayError(3, "etcdserver: injected refusal"))
	e := wantCode(t, run1("ADD", "c1", conf), 5)
	t.Logf("ADD: %s (%s)", e.Msg, e.Details)
	close(held.release)
	waitFor(t, held.applied, 5*time.Second, "the late claim's delivery")
	vals, err := cluster.Values(prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	for k := range vals {
		if strings.Contains(k, "/ip/") {
			t.Fatalf("the late claim committed: %s", k)
		}
	}
	if v := vals[slot]; v == old || !strings.Contains(v, `"containerID":"c1"`) || strings.Contains(v, `"address"`) {
		t.Fatalf("index key holds %q, want the failed ADD's own marker", v)
	}
	mustRun(t, "DEL", "c1", conf)
	wantNoKeys(t)
}

// TestStoppedMemberCostsOneTry (item 7): a member that accepts
// connections and never answers (SIGSTOP) costs the first command one
// per-try timeout; the next ones start with another member, and every
// command succeeds through the remaining quorum.
func TestStoppedMemberCostsOneTry(t *testing.T) {
	needCluster(t)
	leader, err := cluster.Leader()
	if err != nil {
		t.Fatal(err)
	}
	idx := 0
	for i, m := range cluster.Members {
		if m != leader {
			idx = i
			break
		}
	}
	ps := proxies(t)
	stopped := cluster.Members[idx]
	if err := stopped.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopped.Resume() }) // before the proxies close: their held requests then end
	h := newHost(t, nodeFirst("stopped", idx, 3))
	conf := through(t, h, urls(ps...), "2s", sharedPool("10.214.48.0/24"))
	mustRun(t, "STATUS", "", conf)
	r, _ := mustAdd(t, "c1", conf)
	mustRun(t, "CHECK", "c1", withPrev(t, conf, r.Stdout))
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	mustRun(t, "STATUS", "", conf)
	if n := len(ps[idx].requests(nil)); n != 1 {
		t.Errorf("the stopped member was sent %d requests, want 1: only the first command may pay for it", n)
	}
	wantNoKeys(t)
}

// TestExhaustionMarks (item 12): a DEL that freed nothing leaves the
// mark; a mark whose write reaches etcd after a concurrent DEL freed an
// address does not make STATUS say exhausted.
func TestExhaustionMarks(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	h := newHost(t, nodeFirst("marks", 0, 3))
	pools := []map[string]any{{"name": "tiny", "subnet": "10.214.49.0/29", "rangeStart": "10.214.49.2", "rangeEnd": "10.214.49.3"}}
	direct := poolConf(t, h, pools, nil)
	conf := through(t, h, urls(ps...), "4s", pools)
	r1, _ := mustAdd(t, "t1", direct)
	mustAdd(t, "t2", direct)
	wantCode(t, run1("ADD", "t3", direct), 100)
	wantCode(t, run1("STATUS", "", direct), 50)
	mustRun(t, "DEL", "nobody", direct)
	wantCode(t, run1("STATUS", "", direct), 50) // freed nothing: still full
	mustRun(t, "DEL", "t3", direct)
	mustRun(t, "DEL", "t1", withPrev(t, direct, r1.Stdout))
	mustRun(t, "STATUS", "", direct)

	r1, _ = mustAdd(t, "t1", direct) // full again, no mark yet
	held := ps[0].on(func(r request) bool { return r.txn() && r.putsUnder("/full/") }, hold, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wantCode(t, run1("ADD", "t4", conf), 100)
	}()
	waitFor(t, held.arrived, 5*time.Second, "the ADD's mark write")
	mustRun(t, "DEL", "t1", withPrev(t, direct, r1.Stdout)) // frees an address while the mark is on its way
	<-done
	close(held.release)
	waitFor(t, held.applied, 5*time.Second, "the late mark's delivery")
	mustRun(t, "STATUS", "", direct) // an address is free: not exhausted
	mustRun(t, "DEL", "t2", direct)
	mustRun(t, "DEL", "t4", direct)
	wantNoKeys(t)
}

// TestLargeListings (item 9): listings and scans page through etcd, so
// they work on answers an old gateway would refuse (over 4 MiB): leases
// of a node with 100,000 index keys, an ADD that reads a scope of 40,000
// claims, and a GC over those claims, each within its timeout (the
// figures are logged; on an idle 2-vCPU machine each takes a few seconds).
func TestLargeListings(t *testing.T) {
	needCluster(t)
	const bulk, crowd = 100000, 40000
	base := netip.MustParseAddr("10.216.0.1")
	addr := func(i int) netip.Addr {
		a := base
		for range i {
			a = a.Next()
		}
		return a
	}
	p := prefix(t)
	record := func(node, cid, address string) string {
		return fmt.Sprintf(`{"node":%q,"containerID":%q,"ifname":"eth0","network":"etcd-net","address":%q,"pool":"crowd","time":"2026-11-25T00:00:00.000000000Z","claim":"fill"}`, node, cid, address)
	}
	type kv struct{ k, v string }
	var all []kv
	for i := range bulk {
		cid := fmt.Sprintf("b%06d", i)
		all = append(all, kv{p + "node/bulk/pool/crowd/" + cid + "/eth0/0", record("bulk", cid, "")})
	}
	a := base
	for i := range crowd {
		cid := fmt.Sprintf("c%06d", i)
		rec := record("gcnode", cid, a.String())
		all = append(all, kv{p + "ip/pool/crowd/" + a.String(), rec}, kv{p + "node/gcnode/pool/crowd/" + cid + "/eth0/0", rec})
		a = a.Next()
	}
	t.Cleanup(func() {
		_ = cluster.Post(cluster.Members[0], "/v3/kv/deleterange", map[string]any{"key": []byte(p), "range_end": []byte(p[:len(p)-1] + "0")}, nil)
	})
	start := time.Now()
	parallel(16, func(w int) {
		for i := w * 100; i < len(all); i += 16 * 100 {
			var ops []map[string]any
			for _, x := range all[i:min(i+100, len(all))] {
				ops = append(ops, map[string]any{"request_put": map[string]any{"key": []byte(x.k), "value": []byte(x.v)}})
			}
			if err := cluster.Post(cluster.Members[w%3], "/v3/kv/txn", map[string]any{"success": ops}, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	t.Logf("wrote %d keys in %v", len(all), time.Since(start))

	ps := proxies(t)
	for _, x := range ps {
		x.on(func(request) bool { return true }, capAnswer, 0)
	}
	// The pool's range is the 40,000 claimed addresses and ten more:
	// the ADD's search meets taken ones and reads the scope.
	pools := []map[string]any{{"name": "crowd", "subnet": "10.216.0.0/16", "rangeStart": base.String(), "rangeEnd": addr(crowd + 9).String()}}
	adder := newHost(t, "adder")
	start = time.Now()
	// Timeouts here are generous: what is tested is that the reads page
	// (one read of a scope this large is refused, whatever the time), not
	// how fast a shared machine runs them.
	r, got := mustAdd(t, "new", through(t, adder, urls(ps...), "20s", pools))
	t.Logf("ADD in a crowded scope: %s in %v", got[0], time.Since(start))
	if got[0].Compare(addr(crowd)) < 0 {
		t.Fatalf("ADD got %s, which was claimed", got[0])
	}

	start = time.Now()
	lr := cliThrough(t, urls(ps...), "leases", "--node", "bulk", "-o", "json")
	var ls []leaseOut
	if lr.Exit != 0 || json.Unmarshal(lr.Stdout, &ls) != nil || len(ls) != bulk {
		t.Fatalf("leases of node bulk: exit %d, %d leases, %s", lr.Exit, len(ls), lr.Stderr)
	}
	t.Logf("leases of %d index keys in %v", bulk, time.Since(start))

	// GC reads all 40,000 of the node's claims and frees the 1,000 whose
	// containers the runtime no longer lists.
	const gone = 1000
	var valid []string
	for i := range crowd - gone {
		valid = append(valid, fmt.Sprintf("c%06d", i))
	}
	gcHost := newHost(t, "gcnode")
	start = time.Now()
	mustRun(t, "GC", "", gcConf(t, through(t, gcHost, urls(ps...), "20s", pools), valid...))
	t.Logf("GC over %d claims, %d freed, in %v", crowd, gone, time.Since(start))
	n, err := cluster.Count(p + "ip/")
	if err != nil {
		t.Fatal(err)
	}
	if n != crowd-gone+1 {
		t.Fatalf("%d claims left after GC, want %d", n, crowd-gone+1)
	}
	last := p + "ip/pool/crowd/" + addr(crowd-1).String()
	if vals, err := cluster.Values(last); err != nil || vals[last] != "" {
		t.Fatalf("the last container's claim survived GC: %v %v", vals[last], err)
	}
	mustRun(t, "DEL", "new", withPrev(t, through(t, adder, urls(ps...), "20s", pools), r.Stdout))
}
