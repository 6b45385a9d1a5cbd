package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// onePerPoolIPAM is a tenants network (10.<second>.0.0/16) whose pools
// hold one address each: team-a's, team-b's and the default, others.
func onePerPoolIPAM(allocator string, second byte, etcd string) string {
	pool := func(third int) string { return poolRange(second, third, 5, 5) }
	return chainIPAM(allocator, etcd, `
    {"namespace": "team-a", "pools": ["team-a"]},
    {"namespace": "team-b", "pools": ["team-b"]}`,
		fmt.Sprintf(`"team-a": %s, "team-b": %s, "others": %s`, pool(10), pool(20), pool(40)))
}

// networkReady is the NetworkReady condition of the runtime's CRI Status,
// which the kubelet polls every few seconds and which containerd 2.x
// answers with CNI STATUS.
func (c *containerd) networkReady(t *testing.T) *runtimeapi.RuntimeCondition {
	t.Helper()
	resp, err := c.rt.Status(context.Background(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatalf("CRI Status: %v", err)
	}
	for _, cond := range resp.Status.Conditions {
		if cond.Type == runtimeapi.NetworkReady {
			return cond
		}
	}
	t.Fatalf("CRI Status has no NetworkReady condition: %+v", resp.Status)
	return nil
}

// statusSeenBy reports whether the verbose log at path shows personality
// starting a STATUS.
func statusSeenBy(t *testing.T, path, personality string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the plugins' log: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var l struct{ Logger, Msg, Command string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Logger == personality && l.Msg == "start" && l.Command == "STATUS" {
			return true
		}
	}
	return false
}

// On containerd 2.x with a conflist offering 1.1.0, the CRI's Status
// reaches the IPAM chain as CNI STATUS; one namespace's full pool fails
// only that namespace's pods (code 100's message) while NetworkReady
// stays true and other namespaces' pods start; with every pool full the
// node's network is not ready, with the reason; one release makes it
// ready again; stop and remove leave nothing. On both allocators.
func TestStatusThroughCRI(t *testing.T) {
	needCRI(t)
	rel := rels[len(rels)-1] // containerd 2.x: 1.6 sends no STATUS
	for i, allocator := range []string{"ipam-da-pools", "ipam-da-etcd"} {
		t.Run(rel.label+"/"+allocator, func(t *testing.T) {
			second := byte(246 + i)
			prefix, node, etcd := "", "cri-node-status", ""
			if allocator == "ipam-da-etcd" {
				prefix = fmt.Sprintf("/cnpcri-%s-status-%d/", runID, i)
				etcd = etcdKeys(prefix, node)
			}
			logFile := filepath.Join(t.TempDir(), "cni.log")
			c := extraContainerd(t, rel, network{name: fmt.Sprintf("cnpcris%d", i), bridge: fmt.Sprintf("cnpcri%d", 6+i)},
				onePerPoolIPAM(allocator, second, etcd), "CNIPLUGINS_LOG_FILE="+logFile, "CNIPLUGINS_LOG_LEVEL=debug")
			s := &stack{name: allocator, c: c, second: second, storeFlags: storeFlags(c, prefix, node)}
			ready := func(when string) {
				t.Helper()
				if cond := c.networkReady(t); !cond.Status {
					t.Fatalf("NetworkReady false %s: %s: %s", when, cond.Reason, cond.Message)
				}
			}

			ready("with every pool free")
			for _, p := range []string{"ipam-delegated", "ipam-ds-args", allocator} {
				if !statusSeenBy(t, logFile, p) {
					t.Errorf("CRI Status did not reach %s as CNI STATUS", p)
				}
			}

			a1 := s.c.mustRunPod(t, "team-a", "a-1", nil)
			if _, err := c.runPod(context.Background(), "team-a", "a-2", nil); !errHas(err, "no addresses available") {
				t.Fatalf("team-a's second pod in its one-address pool: %v, want code 100's message", err)
			}
			ready("with team-a's pool full and the others free")
			b1 := s.c.mustRunPod(t, "team-b", "b-1", nil)
			o1 := s.c.mustRunPod(t, "default", "o-1", nil)
			ready("with every pool's last address taken, before an ADD found one full")
			for _, ns := range []string{"team-b", "default"} {
				if _, err := c.runPod(context.Background(), ns, ns+"-2", nil); !errHas(err, "no addresses available") {
					t.Fatalf("%s's second pod: %v, want code 100's message", ns, err)
				}
			}
			cond := c.networkReady(t)
			if cond.Status || !strings.Contains(cond.Message, "address pool exhausted") {
				t.Fatalf("NetworkReady with every pool full: %v (%s: %s), want false with the reason", cond.Status, cond.Reason, cond.Message)
			}
			for _, p := range []string{"team-a", "team-b", "others"} {
				if !strings.Contains(cond.Message, "pool "+p) {
					t.Errorf("NetworkReady's message %q does not name pool %s", cond.Message, p)
				}
			}
			t.Logf("every pool full: NetworkReady false, %s: %s", cond.Reason, cond.Message)

			c.removePod(t, b1) // one release
			ready("after one release")
			again := s.c.mustRunPod(t, "team-b", "b-3", nil)
			if again.ip != b1.ip {
				t.Errorf("team-b's pod after the release got %s, want the freed %s", again.ip, b1.ip)
			}
			for _, p := range []pod{a1, o1, again} {
				c.removePod(t, p)
			}
			if ls := s.leases(t); len(ls) != 0 {
				t.Errorf("reservations after stop and remove of every pod: %+v", ls)
			}
			ready("with every pod gone")
		})
	}
}
