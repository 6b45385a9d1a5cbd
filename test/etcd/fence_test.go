package etcd

import (
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

// A release leaves a fence in the attachment's index key (docs/etcd.md,
// "Timeouts and late commits"): a copy of an earlier claim that etcd
// applies after the DEL finds it and claims nothing.

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
	wantFencesExpire(t, 1)

	r, _ = mustAdd(t, "c1", conf) // takes the fence over
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
	wantFencesExpire(t, 1)
}

// wantFencesExpire checks that the test's index keys hold n fences, each
// with a lease that etcd expires within twice the fence's lifetime: the
// garbage a release leaves is bounded and collected.
func wantFencesExpire(t *testing.T, n int) {
	t.Helper()
	const fenceFor = 15 * time.Minute // daetcd's fenceFor
	var resp struct {
		Kvs []struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
			Lease int64  `json:"lease,string"`
		} `json:"kvs"`
	}
	p := prefix(t) + "node/"
	end := []byte(p)
	end[len(end)-1]++
	if err := cluster.Post(runningMember(t), "/v3/kv/range", map[string]any{"key": []byte(p), "range_end": end}, &resp); err != nil {
		t.Fatal(err)
	}
	fences := 0
	for _, kv := range resp.Kvs {
		if !isFence(strings.TrimPrefix(string(kv.Key), prefix(t)), string(kv.Value)) {
			continue
		}
		fences++
		var ttl struct {
			TTL int64 `json:"TTL,string"`
		}
		if err := cluster.Post(runningMember(t), "/v3/lease/timetolive", map[string]any{"ID": kv.Lease}, &ttl); err != nil {
			t.Fatal(err)
		}
		if kv.Lease == 0 || ttl.TTL <= 0 || time.Duration(ttl.TTL)*time.Second > 2*fenceFor {
			t.Errorf("fence %s: lease %d with %ds to live, want one that expires within %v", kv.Key, kv.Lease, ttl.TTL, 2*fenceFor)
		}
	}
	if fences != n {
		t.Errorf("%d fences under %s, want %d", fences, p, n)
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
// runtime's DEL for the failed ADD finds nothing to free; it fences the
// index key all the same, and the claim, delivered after it, claims
// nothing.
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
	wantFencesExpire(t, 1)
}
