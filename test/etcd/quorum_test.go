package etcd

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestQuorumLost kills both followers, so the leader keeps accepting
// proposals it cannot commit: the case where a timed-out claim can still
// commit once they return. ADD must fail with 11 within its timeout plus
// a little, STATUS must say 50, and nothing may be left once quorum is
// back and the runtime has sent its DEL for the failed ADD.
func TestQuorumLost(t *testing.T) {
	needCluster(t)
	leader, err := cluster.Leader()
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t, "host-a")
	const timeout = 2 * time.Second
	conf := poolConf(t, h, sharedPool("10.214.4.0/24"), map[string]any{"timeout": timeout.String()})
	var killed []string
	for _, m := range cluster.Members {
		if m != leader {
			m.Kill()
			killed = append(killed, m.Name)
		}
	}
	t.Logf("killed %v, leader %s alone", killed, leader.Name)

	start := time.Now()
	r := run1("ADD", "lost-1", conf)
	took := time.Since(start)
	e := wantCode(t, r, 11)
	t.Logf("ADD failed after %v: %s (%s)", took, e.Msg, e.Details)
	if took > timeout+execMargin {
		t.Errorf("ADD took %v, want at most its timeout %v (+ %v for the exec)", took, timeout, execMargin)
	}
	for _, ep := range cluster.Endpoints() {
		if !strings.Contains(e.Details, ep) {
			t.Errorf("error details %q do not name endpoint %s", e.Details, ep)
		}
	}
	st := wantCode(t, run1("STATUS", "", conf), 50)
	t.Logf("STATUS without quorum: %s (%s)", st.Msg, st.Details)

	for _, m := range cluster.Members {
		if !m.Running() {
			if err := m.Restart(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cluster.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// A claim proposed before the timeout may have committed now; the
	// failed ADD's own undo, proposed after it, may have too.
	t.Logf("keys once quorum is back, before the runtime's DEL: %v", keys(t))
	mustRun(t, "DEL", "lost-1", conf)
	wantNoKeys(t)
	mustRun(t, "STATUS", "", conf)
	r2, _ := mustAdd(t, "after-quorum", conf)
	mustRun(t, "DEL", "after-quorum", withPrev(t, conf, r2.Stdout))
	wantNoKeys(t)
}

// TestUnreachable: nothing listens on the endpoints. Every command that
// needs etcd fails with 11 naming them, STATUS included.
func TestUnreachable(t *testing.T) {
	needCluster(t)
	var eps []string
	for i := 0; i < 2; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, fmt.Sprintf("http://%s", l.Addr()))
		l.Close()
	}
	h := newHost(t, "host-a")
	const timeout = time.Second
	conf := poolConf(t, h, sharedPool("10.214.5.0/24"), map[string]any{"endpoints": eps, "timeout": timeout.String()})
	for _, cmd := range []string{"ADD", "DEL", "STATUS"} {
		start := time.Now()
		e := wantCode(t, run1(cmd, "c1", conf), 11)
		if took := time.Since(start); took > timeout+execMargin {
			t.Errorf("%s took %v with a %v timeout (+ %v for the exec)", cmd, took, timeout, execMargin)
		}
		if !strings.Contains(e.Msg, "unreachable") || !strings.Contains(e.Details, eps[0]) || !strings.Contains(e.Details, eps[1]) {
			t.Errorf("%s: %s (%s): want unreachable naming %v", cmd, e.Msg, e.Details, eps)
		}
	}
}
