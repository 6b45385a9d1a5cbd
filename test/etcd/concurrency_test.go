package etcd

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// sharedPool is the one pool two hosts allocate from.
func sharedPool(subnet string) []map[string]any {
	return []map[string]any{{"name": "shared", "subnet": subnet}}
}

// addOutcome is one ADD process's result.
type addOutcome struct {
	host  host
	cid   string
	reply testbin.Reply
}

// twoHostsADD runs perHost concurrent ADD processes on each of two
// simulated hosts, calling during (if set) once the first has finished:
// the others are then under way.
func twoHostsADD(t *testing.T, subnet string, perHost int, during func(finished int)) ([]addOutcome, map[string][]byte) {
	hosts := []host{newHost(t, "host-a"), newHost(t, "host-b")}
	confs := map[string][]byte{}
	for _, h := range hosts {
		confs[h.node] = poolConf(t, h, sharedPool(subnet), nil)
	}
	out := make([]addOutcome, 2*perHost)
	var first sync.Once
	var finished atomic.Int32
	firstDone := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		parallel(len(out), func(i int) {
			h := hosts[i%2]
			cid := fmt.Sprintf("%s-c%02d", h.node, i/2)
			out[i] = addOutcome{h, cid, run1("ADD", cid, confs[h.node])}
			finished.Add(1)
			first.Do(func() { close(firstDone) })
		})
	}()
	<-firstDone
	if during != nil {
		during(int(finished.Load()))
	}
	<-done
	return out, confs
}

// distinct asserts that the successful ADDs got distinct addresses, and
// returns how many succeeded.
func distinct(t *testing.T, out []addOutcome) int {
	t.Helper()
	seen := map[netip.Addr]string{}
	ok := 0
	for _, o := range out {
		if o.reply.Exit != 0 {
			continue
		}
		ok++
		as := addrsOf(t, o.reply.Stdout)
		if len(as) != 1 {
			t.Fatalf("%s: %d addresses", o.cid, len(as))
		}
		if prev, dup := seen[as[0]]; dup {
			t.Fatalf("address %s handed out twice: %s and %s", as[0], prev, o.cid)
		}
		seen[as[0]] = o.cid
	}
	return ok
}

// delAll runs the runtime's DEL for every container, failed ADDs included
// (with the ADD's result as prevResult where there was one), concurrently.
func delAll(t *testing.T, out []addOutcome, confs map[string][]byte) {
	t.Helper()
	parallel(len(out), func(i int) {
		o := out[i]
		conf := confs[o.host.node]
		if o.reply.Exit == 0 {
			conf = withPrev(t, conf, o.reply.Stdout)
		}
		// A DEL is retried as a runtime does while the cluster recovers.
		var r testbin.Reply
		for try := 0; try < 5; try++ {
			if r = run1("DEL", o.cid, conf); r.Exit == 0 {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Errorf("DEL %s: %s %s", o.cid, r.Stdout, r.Stderr)
	})
}

func TestTwoHostsConcurrentADDs(t *testing.T) {
	needCluster(t)
	out, confs := twoHostsADD(t, "10.214.1.0/24", 32, nil)
	for _, o := range out {
		if o.reply.Exit != 0 {
			t.Fatalf("ADD %s on %s failed: %s\n%s", o.cid, o.host.node, o.reply.Stdout, o.reply.Stderr)
		}
	}
	if n := distinct(t, out); n != 64 {
		t.Fatalf("%d of 64 ADDs succeeded", n)
	}
	if ks := keys(t); len(ks) != 2*64 {
		t.Fatalf("%d keys after 64 ADDs, want 128 (claim + index key each)", len(ks))
	}
	delAll(t, out, confs)
	wantNoKeys(t)
}

func TestLeaderKilledDuringADDs(t *testing.T) {
	needCluster(t)
	leader, err := cluster.Leader()
	if err != nil {
		t.Fatal(err)
	}
	out, confs := twoHostsADD(t, "10.214.2.0/24", 32, func(finished int) {
		leader.Kill()
		t.Logf("SIGKILLed leader %s with %d of 64 ADDs finished", leader.Name, finished)
		if finished >= 64 {
			t.Fatalf("all 64 ADDs had finished before the leader was killed: none ran through the kill")
		}
	})
	ok := distinct(t, out)
	failed := 0
	for _, o := range out {
		if o.reply.Exit != 0 {
			failed++
			e := oneError(t, o.reply) // exactly one CNI error on stdout
			t.Logf("ADD %s failed: code %d %s (%s)", o.cid, e.Code, e.Msg, e.Details)
		}
	}
	t.Logf("%d ADDs succeeded, %d failed while the leader was killed", ok, failed)
	delAll(t, out, confs)
	wantNoKeys(t)
	if err := leader.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, "host-a")
	conf := poolConf(t, h, sharedPool("10.214.2.0/24"), nil)
	r, _ := mustAdd(t, "after-restart", conf)
	mustRun(t, "DEL", "after-restart", withPrev(t, conf, r.Stdout))
	wantNoKeys(t)
}
