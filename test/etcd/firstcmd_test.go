package etcd

import (
	"testing"
	"time"
)

// A node's first command is as sure as the later ones: its registration
// rides in its first claim's transaction (no round trip of its own), and
// a member that stops answering costs one per-try wait in all.

// TestFirstAddThroughStoppedLeader: a node that never ran a command, the
// leader stopped and first in the node's order, the other members
// answering each request a second late, the timeout 6 s. The claim sent
// to the leader is unanswered for half the timeout (3 s); the ADD fences
// it and claims through the others in two more round trips (2 s), within
// the rest: registering in a round trip of its own, and claiming again
// after it, would need 2 s more than there is. STATUS, CHECK and DEL then
// start with another member: the stopped one is sent one request in all.
func TestFirstAddThroughStoppedLeader(t *testing.T) {
	needCluster(t)
	const late, timeout = time.Second, 6 * time.Second
	idx := leaderIndex(t)
	ps := proxies(t)
	for i, p := range ps {
		if i != idx {
			p.on(func(request) bool { return true }, delay, 0).after(late)
		}
	}
	pause(t, idx)
	h := newHost(t, nodeFirst("first-stopped", idx, 3))
	conf := through(t, h, urls(ps...), timeout.String(), sharedPool("10.214.52.0/24"))
	r, _ := mustAdd(t, "c1", conf)
	mustRun(t, "STATUS", "", conf)
	mustRun(t, "CHECK", "c1", withPrev(t, conf, r.Stdout))
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	if n := len(ps[idx].requests(nil)); n != 1 {
		t.Errorf("the stopped leader was sent %d requests, want 1: only the first command may pay for it", n)
	}
	wantNoKeys(t)
}

// TestFirstAddOnSlowCluster: every answer comes 2 s late, the timeout is
// 5 s: a node's very first ADD is one round trip (its claim registers
// the node), so it succeeds, and sends one write.
func TestFirstAddOnSlowCluster(t *testing.T) {
	needCluster(t)
	const late, timeout = 2 * time.Second, 5 * time.Second
	ps := proxies(t)
	for _, p := range ps {
		p.on(func(request) bool { return true }, delay, 0).after(late)
	}
	h := newHost(t, "first-slow")
	conf := through(t, h, urls(ps...), timeout.String(), sharedPool("10.214.53.0/24"))
	r, _ := mustAdd(t, "c1", conf)
	writes := 0
	for _, p := range ps {
		writes += len(p.requests(func(r request) bool { return r.txn() && r.puts() }))
	}
	if writes != 1 {
		t.Errorf("the first ADD sent %d writes, want 1: the claim, registering the node", writes)
	}
	mustRun(t, "DEL", "c1", withPrev(t, conf, r.Stdout))
	wantNoKeys(t)
}
