package kubernetes

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/kubenode"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// TestKubernetesNode installs cniplugins on a real node as a user does and
// checks, step by step, what kubectl shows. The steps build on each other
// (the node they leave is the next one's), so they run in order, as
// subtests of one test; every assertion is on the API's view (pods'
// addresses and phases, events, the node's conditions) or on the node's
// state as `cniplugins leases` reads it.
func TestKubernetesNode(t *testing.T) {
	c := needNode(t)
	steps := []struct {
		name string
		run  func(*testing.T, *cluster)
	}{
		{"NotReadyUntilInstalled", notReadyUntilInstalled},
		{"NamespacesOnTheirPools", namespacesOnTheirPools},
		{"QuotaRefusedThenRaised", quotaRefusedThenRaised},
		{"StatefulSetKeepsItsAddress", statefulSetKeepsItsAddress},
		{"GCLoopFreesAPlantedLeak", gcLoopFreesAPlantedLeak},
		{"MetricsScraped", metricsScraped},
		{"RollingUpdateUnderChurn", rollingUpdateUnderChurn},
		{"RuntimeKilledUnderLoad", runtimeKilledUnderLoad},
		{"PodStartup", podStartup},
	}
	for i, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, c) }) && i == 0 {
			t.Fatal("nothing is installed: the other steps cannot run")
		}
	}
}

// installed is the first overlay: image v1, capped's quota 2.
var installed = overlay{tag: "v1", cappedMax: 2, metrics: true}

// The node has no network until the DaemonSet installs the conflist: the
// runtime reports NetworkReady false and the kubelet keeps the node
// NotReady; then, with nothing but the image and `kubectl apply -k`, it
// turns Ready.
func notReadyUntilInstalled(t *testing.T, c *cluster) {
	wait(t, time.Minute, "the node NotReady for want of a network", func() error {
		status, msg := c.nodeReady(t)
		if status != corev1.ConditionFalse || !strings.Contains(msg, "network") {
			return fmt.Errorf("Ready=%s: %s", status, msg)
		}
		return nil
	})
	c.apply(t, podMonitorCRD)
	c.kubectl(t, "wait", "--for=condition=Established", "--timeout=1m", "crd/podmonitors.monitoring.coreos.com")
	c.importImage(t, c.cli, installed.tag)
	c.install(t, installed)
	c.kubectl(t, "-n", "kube-system", "rollout", "status", "ds/cniplugins", "--timeout=3m")
	wait(t, 2*time.Minute, "the node Ready", func() error {
		if status, msg := c.nodeReady(t); status != corev1.ConditionTrue {
			return fmt.Errorf("Ready=%s: %s", status, msg)
		}
		return nil
	})
	for _, p := range []string{filepath.Join(c.NetDir, "10-k8s-tenants.conflist"), filepath.Join(c.CNIBin, "ipam-delegated"), filepath.Join(c.CNIBin, "cniplugins")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the installer did not install %s: %v", p, err)
		}
	}
}

// Deployments in three namespaces draw from their pools: team-a's 12 pods
// fill its 8 addresses and spill 4 into its overflow, team-b's stay in
// team-b, and a namespace no rule names draws from the default pool.
func namespacesOnTheirPools(t *testing.T, c *cluster) {
	for ns, n := range map[string]int{"team-a": 12, "team-b": 3, "team-c": 3} {
		c.namespace(t, ns)
		c.deployment(t, ns, "web", n)
	}
	want := map[string]map[string]int{
		"team-a": {"team-a": 8, "shared": 4},
		"team-b": {"team-b": 3},
		"team-c": {"shared": 3},
	}
	for ns, pools := range want {
		n := 0
		for _, k := range pools {
			n += k
		}
		wait(t, 3*time.Minute, ns+" ready", c.allReady(t, ns, n))
		got := map[string]int{}
		for _, p := range c.pods(t, ns) {
			got[poolOf(p.Status.PodIP)]++
		}
		if fmt.Sprint(got) != fmt.Sprint(pools) {
			t.Errorf("%s's pods by pool: %v, want %v", ns, got, pools)
		}
	}
	c.oneAddressPerPod(t)
}

// oneAddressPerPod checks that every running pod's address is reserved
// for one of its containers, and nothing else is reserved but holds.
func (c *cluster) oneAddressPerPod(t *testing.T) {
	t.Helper()
	problems, stale := c.addressProblems(t)
	for _, p := range problems {
		t.Error(p)
	}
	if stale {
		c.diagnose(t)
	}
}

// addressProblems compares the reservations with the ready pods'
// addresses: a pod that shares its address or whose address is not
// reserved, a reservation no ready pod has (stale).
func (c *cluster) addressProblems(t *testing.T) (problems []string, stale bool) {
	t.Helper()
	byIP := addressesOf(c.leases(t))
	seen := map[string]string{}
	for _, p := range c.pods(t, "") {
		if !ready(p) {
			continue
		}
		ip := p.Status.PodIP
		if other, dup := seen[ip]; dup {
			problems = append(problems, fmt.Sprintf("%s/%s and %s share %s", p.Namespace, p.Name, other, ip))
		}
		seen[ip] = p.Namespace + "/" + p.Name
		if _, ok := byIP[ip]; !ok {
			problems = append(problems, fmt.Sprintf("%s/%s's %s is not reserved", p.Namespace, p.Name, ip))
		}
	}
	for ip, l := range byIP {
		if _, ok := seen[ip]; !ok {
			problems = append(problems, fmt.Sprintf("%s is reserved for %s, which no running pod has (pool %s)", ip, l.ContainerID, l.Pool))
			stale = true
		}
	}
	return problems, stale
}

// diagnose logs what explains a leak: every pod's state, the sandbox
// failures, the installer's log.
func (c *cluster) diagnose(t *testing.T) {
	t.Helper()
	for _, p := range c.pods(t, "") {
		t.Logf("pod %s/%s %s %s deleting=%v", p.Namespace, p.Name, p.Status.Phase, p.Status.PodIP, p.DeletionTimestamp != nil)
	}
	out, _ := c.Kubectl(t.Context(), "get", "events", "-A", "--field-selector", "type=Warning")
	t.Logf("warnings:\n%s", out)
	out, _ = c.Kubectl(t.Context(), "-n", "kube-system", "logs", "ds/cniplugins", "--tail=40")
	t.Logf("installer:\n%s", out)
}

// A namespace past its quota: the pods over it do not start, the event
// says why, the node stays Ready; raising the quota in the ConfigMap lets
// them start.
func quotaRefusedThenRaised(t *testing.T, c *cluster) {
	c.namespace(t, "capped")
	c.deployment(t, "capped", "web", 4)
	wait(t, 3*time.Minute, "capped's quota refusal", func() error {
		running := 0
		for _, p := range c.pods(t, "capped") {
			if ready(p) {
				running++
			}
		}
		refused := slices.ContainsFunc(c.events(t, "capped", "FailedCreatePodSandBox"), func(e corev1.Event) bool {
			return strings.Contains(e.Message, "quota")
		})
		if running != 2 || !refused {
			return fmt.Errorf("%d of 4 pods running, a quota refusal event: %v", running, refused)
		}
		return nil
	})
	if status, msg := c.nodeReady(t); status != corev1.ConditionTrue {
		t.Errorf("a tenant's quota made the node NotReady: %s", msg)
	}
	for _, e := range c.events(t, "capped", "FailedCreatePodSandBox") {
		t.Logf("event: %s", e.Message)
		break
	}
	raised := installed
	raised.cappedMax = 4
	c.install(t, raised)
	wait(t, 4*time.Minute, "capped's 4 pods once its quota is 4", c.allReady(t, "capped", 4))
	for _, p := range c.pods(t, "capped") {
		if poolOf(p.Status.PodIP) != "capped" {
			t.Errorf("%s has %s, outside pool capped", p.Name, p.Status.PodIP)
		}
	}
}

// A StatefulSet's pod keeps its address when it is deleted and recreated,
// and when it is scaled away and back (its address held meanwhile).
func statefulSetKeepsItsAddress(t *testing.T, c *cluster) {
	c.namespace(t, "db")
	c.statefulSet(t, "db", "pg", 1)
	wait(t, 2*time.Minute, "pg-0", c.allReady(t, "db", 1))
	first := c.pods(t, "db")[0]
	ip := first.Status.PodIP
	if poolOf(ip) != "db" {
		t.Fatalf("pg-0 has %s, outside pool db", ip)
	}
	c.kubectl(t, "-n", "db", "delete", "pod", "pg-0", "--wait=true")
	wait(t, 2*time.Minute, "pg-0 recreated", func() error {
		if err := c.allReady(t, "db", 1)(); err != nil {
			return err
		}
		if c.pods(t, "db")[0].UID == first.UID {
			return fmt.Errorf("pg-0 not recreated yet")
		}
		return nil
	})
	if got := c.pods(t, "db")[0].Status.PodIP; got != ip {
		t.Errorf("recreated pg-0 has %s, was %s", got, ip)
	}
	c.kubectl(t, "-n", "db", "scale", "statefulset", "pg", "--replicas=0")
	wait(t, 2*time.Minute, "pg scaled to 0", c.allReady(t, "db", 0))
	held := false
	for _, l := range c.leases(t) {
		if strings.Split(l.Address, "/")[0] == ip && l.StickyKey == "db/pg-0" {
			held = true
		}
	}
	if !held {
		t.Errorf("with pg scaled to 0, %s is not held for db/pg-0", ip)
	}
	c.kubectl(t, "-n", "db", "scale", "statefulset", "pg", "--replicas=1")
	wait(t, 2*time.Minute, "pg scaled back", c.allReady(t, "db", 1))
	if got := c.pods(t, "db")[0].Status.PodIP; got != ip {
		t.Errorf("pg-0 scaled back has %s, was %s", got, ip)
	}
}

// The DaemonSet's GC loop releases an address no sandbox owns (an ADD
// whose runtime crashed before it recorded the sandbox), once it is older
// than --gc-min-age, and nothing a live pod holds.
func gcLoopFreesAPlantedLeak(t *testing.T, c *cluster) {
	before := addressesOf(c.leases(t))
	leak := c.plantLeak(t, "team-b")
	wait(t, 2*time.Minute, "the GC loop's release of "+leak, func() error {
		if _, ok := addressesOf(c.leases(t))[leak]; ok {
			return fmt.Errorf("%s still reserved", leak)
		}
		return nil
	})
	after := addressesOf(c.leases(t))
	for ip, l := range before {
		if a, ok := after[ip]; !ok || a.ContainerID != l.ContainerID {
			t.Errorf("the GC loop released %s of live container %s", ip, l.ContainerID)
		}
	}
	logs := c.kubectl(t, "-n", "kube-system", "logs", "ds/cniplugins")
	if !strings.Contains(logs, "gc: released") || !strings.Contains(logs, leak) {
		t.Errorf("the installer's log does not say it released %s:\n%s", leak, logs)
	}
}

// plantLeak reserves an address of ns's pool through the installed
// plugins, as the runtime's ADD does, for a sandbox that never exists, and
// ages it past --gc-min-age. It returns the address.
func (c *cluster) plantLeak(t *testing.T, ns string) string {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(c.NetDir, "10-k8s-tenants.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	pluginConf, err := testbin.PluginConf(conf)
	if err != nil {
		t.Fatalf("the installed conflist: %v", err)
	}
	stdin, err := json.Marshal(pluginConf)
	if err != nil {
		t.Fatal(err)
	}
	id := "leak" + strings.Repeat("0", 60)
	r := testbin.MustSucceed(t, testbin.Call{
		Path: c.CNIBin, Plugin: "ipam-delegated", Command: "ADD", ContainerID: id, IfName: "eth0", Netns: filepath.Join(c.Root, "ghost-netns"),
		Args: "K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=ghost", Stdin: stdin,
	})
	var result struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(r.Stdout, &result); err != nil || len(result.IPs) == 0 {
		t.Fatalf("ADD's result %s: %v", r.Stdout, err)
	}
	ip := strings.Split(result.IPs[0].Address, "/")[0]
	old := time.Now().Add(-time.Hour)
	for _, l := range c.leases(t) {
		if l.ContainerID == id {
			f := filepath.Join(c.dataDir, "_pools", l.Pool, ip)
			if err := os.Chtimes(f, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ip
}

// The metrics component's endpoint, scraped as Prometheus does: the
// pools, the tenants against their quotas, the GC loop's releases and the
// installer's last install.
func metricsScraped(t *testing.T, c *cluster) {
	body := c.scrape(t)
	for _, want := range []string{
		`cniplugins_ipam_used_addresses{kind="pool",name="team-a",range_set="",networks="k8s-test"} 8`,
		`cniplugins_ipam_exhausted{kind="pool",name="team-a",range_set="",networks="k8s-test"} 1`,
		`cniplugins_tenant_addresses{tenant="namespace=capped",pool="capped"} 4`,
		`cniplugins_tenant_quota{tenant="namespace=capped",pool="capped"} 4`,
		`cniplugins_install_last_timestamp_seconds `,
		`cniplugins_gc_released_total `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "cniplugins_gc_released_total 0\n") {
		t.Error("cniplugins_gc_released_total is 0 after the GC loop released the planted leak")
	}
	// The Prometheus Operator would find the pods by the PodMonitor.
	var pm struct {
		Spec struct {
			PodMetricsEndpoints []struct {
				Port string `json:"port"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	if err := c.Get(t.Context(), &pm, "podmonitor", "-n", "kube-system", "cniplugins"); err != nil {
		t.Fatal(err)
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != "metrics" {
		t.Errorf("the PodMonitor's endpoints: %+v", pm.Spec.PodMetricsEndpoints)
	}
}

// A rolling update of the DaemonSet to a second image while pods are
// created and deleted: the rollout completes, the node runs the new
// binary, and no sandbox failed meanwhile.
func rollingUpdateUnderChurn(t *testing.T, c *cluster) {
	dir := t.TempDir()
	if err := testkit.MakeIn(dir, []string{"VERSION=v2-test", "STRIP="}, "cniplugins-full"); err != nil {
		t.Fatal(err)
	}
	c.importImage(t, filepath.Join(dir, "cniplugins-full"), "v2")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	churns := 0
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n := 3 + 5*(i%2)
			if _, err := c.Kubectl(t.Context(), "-n", "team-b", "scale", "deployment", "web", fmt.Sprintf("--replicas=%d", n)); err != nil {
				t.Error(err)
				return
			}
			if err := waitQuiet(c, t, "team-b", n); err != nil {
				t.Error(err)
				return
			}
			churns++
		}
	}()
	next := installed
	next.tag, next.cappedMax = "v2", 4
	c.install(t, next)
	c.kubectl(t, "-n", "kube-system", "rollout", "status", "ds/cniplugins", "--timeout=3m")
	time.Sleep(5 * time.Second) // one more churn with the new binary installed
	close(stop)
	wg.Wait()
	if churns < 2 {
		t.Errorf("only %d scale steps of team-b during the rollout", churns)
	}
	out, err := runCLI(filepath.Join(c.CNIBin, "cniplugins"), "version")
	if err != nil || !strings.Contains(out, "v2-test") {
		t.Errorf("after the rollout the node's binary says %q (%v), want v2-test", out, err)
	}
	for _, e := range c.events(t, "team-b", "FailedCreatePodSandBox") {
		t.Errorf("a sandbox failed during the rollout: %s", e.Message)
	}
	c.oneAddressPerPod(t)
}

// waitQuiet waits until ns has n ready pods, without failing t.
func waitQuiet(c *cluster, t *testing.T, ns string, n int) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := c.allReady(t, ns, n)()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// The runtime and every shim SIGKILLed under 50 pods, then restarted: the
// kubelet recreates every sandbox, and each pod ends with one address and
// no address is left reserved for a sandbox that is gone.
func runtimeKilledUnderLoad(t *testing.T, c *cluster) {
	c.deployment(t, "team-c", "web", 50)
	wait(t, 6*time.Minute, "team-c's 50 pods", c.allReady(t, "team-c", 50))
	counts := map[string]int{}
	for _, p := range c.pods(t, "") {
		counts[p.Namespace]++
	}
	c.KillContainerd()
	if err := c.RestartContainerd(t.Context()); err != nil {
		t.Fatal(err)
	}
	for ns, n := range counts {
		wait(t, 8*time.Minute, ns+" back after the runtime's restart", c.allReady(t, ns, n))
	}
	// The kubelet goes on replacing sandboxes for a while after every
	// pod is ready again (and a pod's status names its new address a
	// moment after the ADD): the reservations must come to match the
	// ready pods exactly, and stay so.
	err := kubenode.Wait(t.Context(), 3*time.Minute, "one address per pod", func() error {
		if problems, _ := c.addressProblems(t); len(problems) > 0 {
			return fmt.Errorf("%d mismatches, first: %s", len(problems), problems[0])
		}
		return nil
	})
	if err != nil {
		t.Error(err) // oneAddressPerPod says what is still wrong
	}
	c.oneAddressPerPod(t)
	if status, msg := c.nodeReady(t); status != corev1.ConditionTrue {
		t.Errorf("the node is not Ready after the runtime's restart: %s", msg)
	}
}
