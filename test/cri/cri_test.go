package cri

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pods of two namespaces get their namespaces' pools, and the state (as
// `cniplugins leases` reads it: the data dir, or the claims in etcd) holds
// exactly their reservations, under the sandbox IDs and in those pools.
func TestNamespacesChoosePools(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		a := s.c.mustRunPod(t, "team-a", "web-1", nil)
		b := s.c.mustRunPod(t, "team-b", "db-1", nil)
		o := s.c.mustRunPod(t, "default", "misc-1", nil)
		ls := s.leases(t)
		for _, c := range []struct {
			p     pod
			pool  string
			third byte
		}{{a, "team-a", 10}, {b, "team-b", 20}, {o, "others", 40}} {
			if !s.in(c.p.ip, c.third) {
				t.Errorf("%s/%s got %s, want an address of pool %s (10.%d.%d.0/24)", c.p.namespace, c.p.name, c.p.ip, c.pool, s.second, c.third)
			}
			l, ok := leaseOf(ls, c.p.id)
			if !ok || l.Pool != c.pool || l.Address != c.p.ip.String() || l.Network != s.c.net.name {
				t.Errorf("%s/%s: lease %+v (found %v), want %s in pool %s of network %s", c.p.namespace, c.p.name, l, ok, c.p.ip, c.pool, s.c.net.name)
			}
		}
		if len(ls) != 3 {
			t.Errorf("3 pods, %d reservations: %+v", len(ls), ls)
		}
	})
}

// A pod may move to a pool its rule's podChoice offers; naming another
// tenant's pool makes RunPodSandbox fail with code 104's message and
// leaves nothing reserved.
func TestAnnotationChoosesPoolAndCannotEscape(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		batch := s.c.mustRunPod(t, "team-a", "batch-1", map[string]string{"cniplugins.io/pools": "team-a-batch"})
		if !s.in(batch.ip, 11) {
			t.Errorf("team-a pod asking for team-a-batch got %s, want 10.%d.11.0/24", batch.ip, s.second)
		}
		before := s.leases(t)
		_, err := s.c.runPod(context.Background(), "team-a", "escape-1", map[string]string{"cniplugins.io/pools": "team-b"})
		if !errHas(err, "pool not allowed for this attachment") {
			t.Fatalf("tenant escape: RunPodSandbox error = %v, want code 104's message", err)
		}
		if after := s.leases(t); len(after) != len(before) {
			t.Errorf("the refused pod left reservations: %d before, %d after: %+v", len(before), len(after), after)
		}
	})
}

// cniplugins.io/ip gives the pod that address; a second pod asking for it
// fails with code 101's message and reserves nothing.
func TestAnnotationAsksForAnAddress(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		want := netip.AddrFrom4([4]byte{10, s.second, 20, 77})
		first := s.c.mustRunPod(t, "team-b", "fixed-1", map[string]string{"cniplugins.io/ip": want.String()})
		if first.ip != want {
			t.Fatalf("pod asking for %s got %s", want, first.ip)
		}
		before := s.leases(t)
		_, err := s.c.runPod(context.Background(), "team-b", "fixed-2", map[string]string{"cniplugins.io/ip": want.String()})
		if !errHas(err, "requested address is already reserved") {
			t.Fatalf("second pod asking for %s: RunPodSandbox error = %v, want code 101's message", want, err)
		}
		if after := s.leases(t); len(after) != len(before) {
			t.Errorf("the refused pod left reservations: %+v", after)
		}
	})
}

// Stop and remove send DEL twice (the second with CNI_NETNS="" and no
// prevResult); both succeed and the state is exactly empty afterwards.
func TestStopAndRemoveEmptyTheState(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		if ls := s.leases(t); len(ls) != 0 {
			t.Fatalf("state not empty at the start: %+v", ls)
		}
		ctx := context.Background()
		var pods []pod
		for i, ns := range []string{"team-a", "team-b", "default"} {
			p, err := s.c.runPod(ctx, ns, fmt.Sprintf("gone-%d", i), nil)
			if err != nil {
				t.Fatal(err)
			}
			pods = append(pods, p)
		}
		if ls := s.leases(t); len(ls) != len(pods) {
			t.Fatalf("%d pods, %d reservations: %+v", len(pods), len(ls), ls)
		}
		for _, p := range pods {
			if _, err := s.c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.id}); err != nil {
				t.Fatalf("StopPodSandbox %s: %v", p.name, err)
			}
		}
		if ls := s.leases(t); len(ls) != 0 {
			t.Errorf("reservations left after StopPodSandbox (the DEL with prevResult): %+v", ls)
		}
		// RemovePodSandbox sends the second DEL: no netns, no prevResult.
		// It must succeed and change nothing.
		for _, p := range pods {
			if _, err := s.c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.id}); err != nil {
				t.Errorf("RemovePodSandbox %s: %v", p.name, err)
			}
		}
		if ls := s.leases(t); len(ls) != 0 {
			t.Errorf("reservations after RemovePodSandbox: %+v", ls)
		}
	})
}

// 40 pods started at once get 40 distinct addresses, all released after
// removal.
func TestConcurrentPods(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		const n = 40
		pods := make([]pod, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pods[i], errs[i] = s.c.runPod(ctx, "default", fmt.Sprintf("burst-%d", i), nil)
			}()
		}
		wg.Wait()
		seen := map[netip.Addr]string{}
		for i, p := range pods {
			if errs[i] != nil {
				t.Errorf("pod %d: %v", i, errs[i])
				continue
			}
			if other, dup := seen[p.ip]; dup {
				t.Errorf("%s given to both %s and %s", p.ip, other, p.name)
			}
			seen[p.ip] = p.name
			if !s.in(p.ip, 40) {
				t.Errorf("%s got %s, outside pool others", p.name, p.ip)
			}
		}
		if ls := s.leases(t); len(ls) != len(seen) {
			t.Errorf("%d pods running, %d reservations", len(seen), len(ls))
		}
		var rw sync.WaitGroup
		for i, p := range pods {
			if errs[i] != nil {
				continue
			}
			rw.Add(1)
			go func() { defer rw.Done(); s.c.removePod(t, p) }()
		}
		rw.Wait()
		if ls := s.leases(t); len(ls) != 0 {
			t.Errorf("reservations left after removing every pod: %+v", ls)
		}
	})
}
