package etcd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

// A release writes its node's fence bucket, which every claim compares
// (docs/etcd.md, "Timeouts and late commits"): a copy of an earlier claim
// that etcd applies after the DEL fails on it and claims nothing.

// TestLateClaimAfterDelIsFenced: the ADD's claim is held on its way to a
// member; the ADD fences it and succeeds through another, the runtime
// DELs the container, and only then is the held copy delivered. It must
// claim nothing; the same container and interface can be ADDed again.
func TestLateClaimAfterDelIsFenced(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	h := newHost(t, nodeFirst("late-claim", 0, 3))
	conf := through(t, h, urls(ps...), "2s", sharedPool("10.214.50.0/24"))
	held := ps[0].on(claimPut, hold, 1)
	r, _ := mustAdd(t, "c1", conf)
	waitFor(t, held.arrived, time.Second, "the claim's first copy")
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	close(held.release)
	waitFor(t, held.applied, 5*time.Second, "the late copy's delivery")
	wantNoKeys(t)
	wantFenceBuckets(t)

	r, _ = mustAdd(t, "c1", conf)
	mustRun(t, "CHECK", "c1", withPrev(t, conf, r.Stdout))
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	wantNoKeys(t)
}

// TestStoppedLeaderClaimAfterDel: the leader is SIGSTOPped with an ADD's
// claim in its socket; the ADD fences the claim and succeeds through the
// others, the runtime DELs the container, and the leader is resumed: it
// reads the claim and forwards it. It must claim nothing. The proxy in
// front of the leader passes everything through and tells when the
// leader answered the claim, so the test knows when to look.
func TestStoppedLeaderClaimAfterDel(t *testing.T) {
	needCluster(t)
	idx := leaderIndex(t)
	ps := proxies(t)
	watch := ps[idx].on(claimPut, pass, 1)
	h := newHost(t, nodeFirst("stopped-leader", idx, 3))
	conf := through(t, h, urls(ps...), "5s", sharedPool("10.214.51.0/24"))
	leader := pause(t, idx)
	r, _ := mustAdd(t, "c1", conf)
	waitFor(t, watch.arrived, time.Second, "the claim sent to the stopped leader")
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	if err := leader.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, watch.applied, 30*time.Second, "the resumed leader's answer to the claim")
	if err := cluster.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	wantNoKeys(t)
	wantFenceBuckets(t)
}

// wantFenceBuckets checks what a release leaves: no key of the
// attachment (no fence in its index key), no lease on any key, and per
// node at most the fence buckets (16), each holding a nonce.
func wantFenceBuckets(t *testing.T) {
	t.Helper()
	var resp struct {
		Kvs []struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
			Lease int64  `json:"lease,string"`
		} `json:"kvs"`
	}
	p := prefix(t)
	end := []byte(p)
	end[len(end)-1]++
	if err := cluster.Post(runningMember(t), "/v3/kv/range", map[string]any{"key": []byte(p), "range_end": end}, &resp); err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, kv := range resp.Kvs {
		rel := strings.TrimPrefix(string(kv.Key), p)
		if kv.Lease != 0 {
			t.Errorf("%s has lease %d: nothing is put with one", rel, kv.Lease)
		}
		switch {
		case strings.HasPrefix(rel, "node/"):
			t.Errorf("index key %s = %s left after the release", rel, kv.Value)
		case isFenceBucket(rel, string(kv.Value)):
			node, _, _ := strings.Cut(strings.TrimPrefix(rel, "fences/"), "/")
			perNode[node]++
		}
	}
	for node, n := range perNode {
		if n > 16 {
			t.Errorf("node %s has %d fence buckets, want at most 16", node, n)
		}
	}
}

// runningMember is a member that runs and is not the one a test paused
// (it answers: Values' choice).
func runningMember(t *testing.T) *etcdtest.Member {
	t.Helper()
	for _, m := range cluster.Members {
		if m.Running() && cluster.Post(m, "/v3/kv/range", map[string]string{"key": "AA=="}, nil) == nil {
			return m
		}
	}
	t.Fatal("no member answers")
	return nil
}

// TestUnknownAttachmentDelFences: an ADD's claim is held on its way, and
// etcd refuses both the ADD's fence and its undo, so the ADD fails and
// leaves nothing in etcd while its claim is still in flight. The
// runtime's DEL for the failed ADD finds nothing to free; it writes the
// attachment's fence bucket all the same, and the claim, delivered after
// it, claims nothing.
func TestUnknownAttachmentDelFences(t *testing.T) {
	needCluster(t)
	ps := proxies(t)[:2]
	h := newHost(t, nodeFirst("undo-refused", 0, 2))
	conf := through(t, h, urls(ps...), "2s", sharedPool("10.214.54.0/24"))
	held := ps[0].on(claimPut, hold, 1)
	ps[1].on(func(r request) bool { return r.txn() && r.putsUnder("/node/") && !r.putsUnder("/ip/") }, answerOwn, 2).
		answering(400, gatewayError(3, "etcdserver: injected refusal"))
	e := wantCode(t, run1("ADD", "c1", conf), 5)
	t.Logf("ADD: %s (%s)", e.Msg, e.Details)
	waitFor(t, held.arrived, time.Second, "the claim's first copy")
	mustRun(t, "DEL", "c1", conf)
	close(held.release)
	waitFor(t, held.applied, 5*time.Second, "the late claim's delivery")
	wantNoKeys(t)
	wantFenceBuckets(t)
}

// TestKeysAfterChurnBounded: two hosts ADD and DEL N attachments, then 4N
// more (half the DELs with prevResult, half without, as containerd sends
// them twice): the keys under the prefix are the same bounded count both
// times, each node's record and fence buckets and the pool's exhaustion
// mark, whatever the churn. (A fence per released attachment grew them by
// one per DEL for 15 to 30 minutes.)
func TestKeysAfterChurnBounded(t *testing.T) {
	needCluster(t)
	hosts := []host{newHost(t, "churn-a"), newHost(t, "churn-b")}
	var confs [][]byte
	for _, h := range hosts {
		confs = append(confs, poolConf(t, h, sharedPool("10.214.57.0/24"), nil))
	}
	all := func() int {
		t.Helper()
		kvs, err := cluster.Values(prefix(t))
		if err != nil {
			t.Fatal(err)
		}
		return len(kvs)
	}
	churn := func(from, n int) int {
		t.Helper()
		parallel(len(hosts), func(h int) {
			for i := from; i < from+n; i++ {
				cid := fmt.Sprintf("churn-%d-%d", h, i)
				r, _ := mustAdd(t, cid, confs[h])
				conf := confs[h]
				if i%2 == 0 {
					conf = withPrev(t, confs[h], r.Stdout)
				}
				mustRun(t, "DEL", cid, conf)
			}
		})
		wantNoKeys(t)
		return all()
	}
	const n = 12
	once := churn(0, n)
	four := churn(n, 4*n)
	want := len(hosts)*(1+16) + 1 // node records, fence buckets, the pool's mark
	if once != want || four != want {
		t.Fatalf("keys under the prefix after %d attachments: %d; after %d more: %d; want %d both times", 2*n, once, 8*n, four, want)
	}
	wantFenceBuckets(t)
}

// TestLateMarkerCopyAfterDel: the ADD's claim is held on its way; the
// marker that fences it reaches a member only as a late copy (its
// connection cut at once, the copy delivered 2 s later), so the ADD sends
// it again through the third member, claims over it and succeeds, and
// the runtime DELs the container. Then both copies arrive: neither may
// leave anything, although the index key is absent again after the DEL
// (the marker's condition): the DEL moved the fence bucket that the
// marker also requires.
func TestLateMarkerCopyAfterDel(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	h := newHost(t, nodeFirst("late-marker", 0, 3))
	conf := through(t, h, urls(ps...), "2s", sharedPool("10.214.58.0/24"))
	mustRun(t, "STATUS", "", conf) // the node's record first
	claim := ps[0].on(claimPut, hold, 1)
	isMarker := func(r request) bool { return r.txn() && r.putsUnder("/node/") && !r.putsUnder("/ip/") }
	ps[1].on(isMarker, late, 1).after(2 * time.Second)
	r, _ := mustAdd(t, "c1", conf)
	waitFor(t, claim.arrived, time.Second, "the claim's first copy")
	if n := len(ps[1].requests(isMarker)); n != 1 {
		t.Fatalf("%d markers went to member 1, want the one copied late: the test proves nothing", n)
	}
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	close(claim.release)
	waitFor(t, claim.applied, 5*time.Second, "the late claim's delivery")
	time.Sleep(2500 * time.Millisecond) // the marker's late copy
	wantNoKeys(t)
	wantFenceBuckets(t)
}
