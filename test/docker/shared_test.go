package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// cniConf is a pool-mode ADD on pool "shared", as ipam-ds-static would
// hand it to ipam-da-pools.
func cniConf(extra string) []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":"cnpd-cni","ipam":{"type":"ipam-da-pools","dataDir":%q,
		"poolDefinitions":{"shared":[{"subnet":"10.213.1.0/24"}]}},
		"prevResult":{"cniVersion":"1.1.0","pools":[{"name":"shared"}]}%s}`, dataDir, extra))
}

func cniCall(cmd, id string, stdin []byte) testbin.Call {
	return testbin.Call{Plugin: "ipam-da-pools", Command: cmd, ContainerID: id, IfName: "eth0", Netns: "/var/run/netns/" + id, Path: binDir, Stdin: stdin}
}

// One pool, a Docker network on it and a CNI network on it, containers
// of both started at once: no address is handed out twice; CNI GC and DEL
// never free Docker's; Docker never frees CNI's.
func TestSharedPoolRaceWithCNI(t *testing.T) {
	needDocker(t)
	t.Parallel()
	const net = "cnpd-sh"
	network(t, net, "--subnet", "10.213.1.0/24")
	if ps := poolsFor(t, "10.213.1.0/24"); len(ps) != 1 || ps[0].Pool != "shared" {
		t.Fatalf("the Docker network is not bound to pool shared: %+v", ps)
	}
	const nDocker, nCNI = 6, 24
	var (
		mu    sync.Mutex
		owner = map[string]string{}
		wg    sync.WaitGroup
	)
	claim := func(ip, who string) {
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := owner[ip]; dup {
			t.Errorf("%s handed to both %s and %s", ip, prev, who)
		}
		owner[ip] = who
	}
	for i := range nDocker {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("cnpd-sh-%d", i)
			t.Cleanup(func() { _, _ = daemon.Run("rm", "-f", name) })
			if _, err := daemon.Run("run", "-d", "--name", name, "--network", net, image, "sleep", "300"); err != nil {
				t.Error(err)
				return
			}
			ip, _ := containerIPs(t, name, net)
			claim(ip, name)
		}()
	}
	for i := range nCNI {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("cnpdcni%02d", i)
			r := testbin.Run(cniCall("ADD", id, cniConf("")))
			if r.Exit != 0 {
				t.Errorf("CNI ADD %s: %s %s", id, r.Stdout, r.Stderr)
				return
			}
			var res struct{ IPs []struct{ Address string } }
			if err := json.Unmarshal(r.Stdout, &res); err != nil || len(res.IPs) != 1 {
				t.Errorf("CNI ADD %s printed %s", id, r.Stdout)
				return
			}
			claim(strings.Split(res.IPs[0].Address, "/")[0], id)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(owner) != nDocker+nCNI {
		t.Fatalf("%d addresses for %d containers", len(owner), nDocker+nCNI)
	}
	res := reservations(t, "shared")
	for ip, who := range owner {
		isCNI := strings.HasPrefix(who, "cnpdcni")
		if got := res[ip]; isDockers(got) == isCNI || (isCNI && !strings.HasPrefix(got, who+"\r\n")) {
			t.Errorf("%s (%s) is recorded as %q", ip, who, got)
		}
	}

	// CNI GC of the CNI network, keeping nothing: every CNI reservation
	// goes, no Docker one.
	gc := cniCall("GC", "", cniConf(`,"cni.dev/valid-attachments":[]`))
	gc.ContainerID, gc.IfName, gc.Netns = "", "", ""
	testbin.MustSucceed(t, gc)
	res = reservations(t, "shared")
	if len(res) != nDocker {
		t.Errorf("after CNI GC the pool holds %d reservations, want Docker's %d", len(res), nDocker)
	}
	for ip, c := range res {
		if !isDockers(c) {
			t.Errorf("CNI GC left %s %q", ip, c)
		}
	}
	for i := range nDocker {
		dk(t, "rm", "-f", fmt.Sprintf("cnpd-sh-%d", i))
	}
	if res := reservations(t, "shared"); len(res) != 0 {
		t.Errorf("left in the pool: %q", res)
	}
}

// The driver killed (a crash: its socket stays behind) and stopped
// (SIGTERM: exit 0, socket removed) mid-way, and dockerd restarted: pools,
// reference counts and addresses are kept throughout, and everything is
// released at the end.
func TestRestartsKeepState(t *testing.T) {
	needDocker(t)
	const net, pool = "cnpd-rs", "docker-10.213.14.0-24"
	network(t, net, "--subnet", "10.213.14.0/24", "--aux-address", "r=10.213.14.200")
	c1 := runDetached(t, "cnpd-rs-1", "--network", net)
	ip1, _ := containerIPs(t, c1, net)
	before := reservations(t, pool)

	if err := drv.stop(syscall.SIGKILL); err == nil {
		t.Fatal("SIGKILL reported as a clean exit")
	}
	if _, err := os.Lstat(drv.socket); err != nil {
		t.Fatalf("a killed driver's socket should stay behind: %v", err)
	}
	if err := drv.start(); err != nil {
		t.Fatalf("restart over a stale socket: %v", err)
	}
	c2 := runDetached(t, "cnpd-rs-2", "--network", net)
	ip2, _ := containerIPs(t, c2, net)
	if ip2 == ip1 || ip2 == "10.213.14.200" || ip2 == "" {
		t.Errorf("after the restart the new container got %q (first %s)", ip2, ip1)
	}
	if got := reservations(t, pool); len(got) != len(before)+1 {
		t.Errorf("reservations %q, want those from before %q plus %s", got, before, ip2)
	}

	if err := drv.stop(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v, want exit 0", err)
	}
	if _, err := os.Lstat(drv.socket); !os.IsNotExist(err) {
		t.Errorf("socket left after SIGTERM: %v", err)
	}
	if err := drv.start(); err != nil {
		t.Fatal(err)
	}

	// dockerd restarts: its containers stop (their addresses are
	// released), the network and its pool stay.
	if err := daemon.Restart(); err != nil {
		t.Fatal(err)
	}
	if ps := poolsFor(t, "10.213.14.0/24"); len(ps) != 1 || ps[0].Refs != 1 {
		t.Errorf("pool after the dockerd restart: %+v", ps)
	}
	c3 := runDetached(t, "cnpd-rs-3", "--network", net)
	if ip, _ := containerIPs(t, c3, net); ip == "" || ip == "10.213.14.200" {
		t.Errorf("after the dockerd restart the container got %q", ip)
	}
	dk(t, "rm", "-f", c1, c2, c3)
	dk(t, "network", "rm", net)
	if got := reservations(t, pool); len(got) != 0 {
		t.Errorf("left after network rm: %q", got)
	}
	if ps := poolsFor(t, "10.213.14.0/24"); len(ps) != 0 {
		t.Errorf("pool left in the driver's state: %+v", ps)
	}
}
