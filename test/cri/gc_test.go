package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// readySandboxes is what the runtime lists as READY, with each one's
// address.
func (c *containerd) readySandboxes(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	l, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range l.Items {
		if s.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		st, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: s.Id})
		if err != nil {
			t.Fatal(err)
		}
		ip := ""
		if st.Status.Network != nil {
			ip = st.Status.Network.Ip
		}
		out[s.Id] = ip
	}
	return out
}

// containerd SIGKILLed while RunPodSandbox calls are in flight, then
// restarted: ADDs that completed for sandboxes the runtime never recorded
// are leaks. `gc --cri` releases exactly those: afterwards every
// reservation belongs to a READY sandbox and every READY sandbox still has
// its address. Then every pod goes and the state is empty.
func TestGCAfterRuntimeKilledMidADD(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		t.Cleanup(func() {
			for id := range s.c.readySandboxes(t) {
				s.c.removePod(t, pod{id: id, name: id})
			}
			if ls := s.leases(t); len(ls) != 0 {
				t.Errorf("reservations left after removing every pod: %+v", ls)
			}
			if err := s.c.reset(); err != nil {
				t.Errorf("a fresh daemon after the kill: %v", err)
			}
		})
		// Pods that were running before the crash must keep their addresses.
		var running []pod
		for i := range 4 {
			p, err := s.c.runPod(context.Background(), "team-b", fmt.Sprintf("steady-%d", i), nil)
			if err != nil {
				t.Fatal(err)
			}
			running = append(running, p)
		}
		const n = 16
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = s.c.runPod(ctx, "default", fmt.Sprintf("killed-%d", i), nil)
			}()
		}
		// Kill while ADDs are running: wait for the first new reservation.
		deadline := time.Now().Add(time.Minute)
		for len(s.leases(t)) <= len(running) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if len(s.leases(t)) <= len(running) {
			t.Fatalf("no ADD reserved an address within a minute of 16 RunPodSandbox calls: killing containerd now would test nothing")
		}
		s.c.kill()
		wg.Wait()
		if err := s.c.restart(); err != nil {
			t.Fatal(err)
		}
		// Let the plugins still running when containerd died finish.
		time.Sleep(3 * time.Second)
		before := s.leases(t)
		live := s.c.readySandboxes(t)
		t.Logf("after the restart: %d reservations, %d ready sandboxes", len(before), len(live))
		for _, p := range running {
			if live[p.id] != p.ip.String() {
				t.Fatalf("pod %s, running before the crash, is not ready with %s after it (ready: %v)", p.name, p.ip, live)
			}
		}
		// The precondition: the kill left reservations of sandboxes the
		// runtime does not run, or gc --cri below would prove nothing.
		leaked := 0
		for _, l := range before {
			if _, ok := live[l.ContainerID]; !ok {
				leaked++
			}
		}
		if leaked == 0 {
			t.Fatalf("the kill mid-ADD left no leak (%d reservations, all of ready sandboxes): nothing for gc --cri to release", len(before))
		}

		// The default --min-age keeps everything this young.
		if out, stderr, code := s.gc(t, "--apply"); code != 0 || strings.Count(out, "\n") > 1 {
			t.Fatalf("gc --cri --apply with the default min-age: exit %d, released:\n%s%s", code, out, stderr)
		}
		if got := s.leases(t); len(got) != len(before) {
			t.Fatalf("the default --min-age released young reservations: %d → %d", len(before), len(got))
		}

		// The plan, then the release.
		out, stderr, code := s.gc(t, "--min-age", "0", "-o", "json")
		if code != 0 {
			t.Fatalf("gc --cri dry run: exit %d: %s", code, stderr)
		}
		var plan []lease
		if err := json.Unmarshal([]byte(out), &plan); err != nil {
			t.Fatalf("gc --cri -o json: %v: %s", err, out)
		}
		for _, l := range plan {
			if _, ok := live[l.ContainerID]; ok {
				t.Errorf("the plan releases %s of a ready sandbox", l.Address)
			}
		}
		if len(plan) != leaked {
			t.Errorf("gc --cri plans %d releases, want the %d leaks: %+v", len(plan), leaked, plan)
		}
		if _, stderr, code := s.gc(t, "--min-age", "0", "--apply"); code != 0 {
			t.Fatalf("gc --cri --apply: exit %d: %s", code, stderr)
		}
		after := s.leases(t)
		if len(after) != len(before)-len(plan) {
			t.Errorf("%d reservations before, %d planned, %d after", len(before), len(plan), len(after))
		}
		owned := map[string]string{}
		for _, l := range after {
			if _, ok := live[l.ContainerID]; !ok {
				t.Errorf("after gc --cri, %s is reserved by %s, which is no ready sandbox", l.Address, l.ContainerID)
			}
			owned[l.ContainerID] = l.Address
		}
		for id, ip := range live {
			if owned[id] != ip {
				t.Errorf("ready sandbox %s has %q, its reservation is %q", id, ip, owned[id])
			}
		}
	})
}

// An endpoint that cannot be asked is an error (exit 2) that releases
// nothing: never "no sandboxes, so release everything".
func TestGCUnreachableEndpointReleasesNothing(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		p := s.c.mustRunPod(t, "default", "survivor", nil)
		before := s.leases(t)
		out, stderr, code := s.cli(t, "gc", "--cri", filepath.Join(s.c.root, "nothing.sock"), "--cni-conf-dir", s.c.confDir, "--min-age", "0", "--apply", "--cri-timeout", "2s")
		if code != 2 || !strings.Contains(stderr, "nothing released") {
			t.Errorf("gc --cri against no runtime: exit %d: %s%s; want exit 2 saying nothing was released", code, out, stderr)
		}
		after := s.leases(t)
		if len(after) != len(before) {
			t.Errorf("reservations %d → %d", len(before), len(after))
		}
		if _, ok := leaseOf(after, p.id); !ok {
			t.Errorf("the live pod lost its reservation")
		}
	})
}
