package cri

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// TestStickyPodKeepsItsAddress: a StatefulSet's pod removed and created
// again under the same name (a new sandbox, so a new container ID) gets
// its address back, on both allocators; another pod never gets it in
// between. The namespace's rule in ipam-ds-args is "sticky": true.
func TestStickyPodKeepsItsAddress(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		t.Cleanup(func() {
			for _, key := range []string{"stateful/db-0", "stateful/db-1"} {
				if _, stderr, code := s.cli(t, "release", "--sticky-key", key, "--pool", "stateful"); code != 0 && !strings.Contains(stderr, "no hold") {
					t.Errorf("release --sticky-key %s: exit %d: %s", key, code, stderr)
				}
			}
		})
		first, err := s.c.runPod(context.Background(), "stateful", "db-0", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !s.in(first.ip, 30) {
			t.Fatalf("db-0 got %s, outside pool stateful", first.ip)
		}
		s.c.removePod(t, first)
		held := false
		for _, l := range s.leases(t) {
			held = held || (l.Address == first.ip.String() && l.Owner == "sticky")
		}
		if !held {
			t.Fatalf("after db-0's removal its address %s is not held: %+v", first.ip, s.leases(t))
		}
		other := s.c.mustRunPod(t, "stateful", "db-1", nil)
		if other.ip == first.ip {
			t.Fatalf("db-1 got db-0's held address %s", other.ip)
		}
		again := s.c.mustRunPod(t, "stateful", "db-0", nil)
		if again.id == first.id || again.ip != first.ip {
			t.Fatalf("db-0 re-created as sandbox %s got %s, want %s back", again.id, again.ip, first.ip)
		}
		// The pods go at cleanup, then the holds their removal leaves.
	})
}

// TestStickyLeakBecomesAHoldUnderGC: a stateful pod whose sandbox vanished
// without its DEL (a node crash, a runtime that lost it) leaves a keyed
// reservation no sandbox owns. `gc --cri` turns it into a hold, as the
// pod's DEL would have, rather than freeing it: the pod created again
// under its name gets its address back.
func TestStickyLeakBecomesAHoldUnderGC(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		t.Cleanup(func() {
			if _, stderr, code := s.cli(t, "release", "--sticky-key", "stateful/db-7", "--pool", "stateful"); code != 0 && !strings.Contains(stderr, "no hold") {
				t.Errorf("release --sticky-key: exit %d: %s", code, stderr)
			}
		})
		leaked := s.runtimeADD(t, "leaked-db-7", "K8S_POD_NAMESPACE=stateful;K8S_POD_NAME=db-7")
		if out, stderr, code := s.gc(t, "--min-age", "0", "--apply"); code != 0 || !strings.Contains(out, leaked.String()) {
			t.Fatalf("gc --cri --apply: exit %d, want %s listed:\n%s%s", code, leaked, out, stderr)
		}
		held := false
		for _, l := range s.leases(t) {
			held = held || (l.Address == leaked.String() && l.Owner == "sticky")
		}
		if !held {
			t.Fatalf("after gc --cri the leaked sticky reservation %s is not held: %+v", leaked, s.leases(t))
		}
		p := s.c.mustRunPod(t, "stateful", "db-7", nil) // removed at cleanup, before the hold it leaves
		if p.ip != leaked {
			t.Errorf("db-7 re-created got %s, want its address %s back", p.ip, leaked)
		}
	})
}

// runtimeADD is an ADD of the stack's network's IPAM, exec'd as the
// bridge plugin would exec it (its conflist entry with name and
// cniVersion), for a container that no runtime knows: a leak.
func (s *stack) runtimeADD(t *testing.T, cid, args string) netip.Addr {
	t.Helper()
	return s.ipamADD(t, s.pluginConf(t), cid, args)
}

// pluginConf is the stack's conflist entry with the list's name and
// cniVersion, as the runtime hands it to the bridge plugin.
func (s *stack) pluginConf(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.c.confDir, "10-"+s.c.net.name+".conflist"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := testbin.PluginConf(raw)
	if err != nil {
		t.Fatalf("conflist: %v", err)
	}
	return conf
}

// ipamADD execs conf's IPAM plugin from the stack's bin dir with ADD, as
// the bridge plugin would, and returns the first address it reserved.
func (s *stack) ipamADD(t *testing.T, conf map[string]any, cid, args string) netip.Addr {
	t.Helper()
	r := testbin.MustSucceed(t, s.ipamCall(t, conf, "ADD", cid, args))
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(r.Stdout, &res); err != nil || len(res.IPs) == 0 {
		t.Fatalf("ADD result %s: %v", r.Stdout, err)
	}
	return netip.MustParsePrefix(res.IPs[0].Address).Addr()
}

// ipamCall is an exec of conf's IPAM plugin from the stack's bin dir, as
// the bridge plugin makes it for container cid's eth0.
func (s *stack) ipamCall(t *testing.T, conf map[string]any, command, cid, args string) testbin.Call {
	t.Helper()
	stdin, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	ipam, _ := conf["ipam"].(map[string]any)
	typ, _ := ipam["type"].(string)
	return testbin.Call{Path: s.c.rel.cniBin, Plugin: typ, Command: command, ContainerID: cid, IfName: "eth0",
		Netns: "/var/run/netns/" + cid, Args: args, Stdin: stdin}
}
