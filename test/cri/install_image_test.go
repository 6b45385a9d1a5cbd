package cri

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/ctrimage"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// The versions of the test images: what `cniplugins version` answers.
const (
	v1 = "test" // the package's binary (TestMain builds it)
	v2 = "test-2"
)

// v1Binary is the full flavour's binary TestMain built and installed.
func v1Binary() string { return fullBin }

// The image, imported into containerd and run as the DaemonSet's
// container with the node's directories mounted, installs the binary, a
// link per personality and the ConfigMap's conflist; pods then start
// through the installed plugins and get their namespaces' pools.
func TestImageInstallsTheNode(t *testing.T) {
	nd := newNode(t)
	ref := nd.importImage(t, imageOf(t, v1Binary(), v1), v1)
	in := nd.install(t, ref)

	names := personalities(t, v1Binary())
	want := append([]string{"bridge", "cniplugins", "loopback"}, names...)
	slices.Sort(want)
	if got := testkit.DirNames(t, nd.bin); !slices.Equal(got, want) {
		t.Errorf("the node's bin dir holds %v, want %v", got, want)
	}
	for _, n := range names {
		if dest, err := os.Readlink(filepath.Join(nd.bin, n)); err != nil || dest != "cniplugins" {
			t.Errorf("%s: link to %q (%v), want cniplugins", n, dest, err)
		}
	}
	if !sameBytes(t, filepath.Join(nd.bin, "cniplugins"), v1Binary()) {
		t.Error("the installed cniplugins is not the image's binary")
	}
	if got := testkit.DirNames(t, nd.c.confDir); !slices.Equal(got, []string{".cniplugins-installed", nd.confName}) {
		t.Errorf("the node's net.d holds %v, want only the ConfigMap's %s and the record of what the installer wrote", got, nd.confName)
	}
	if b, err := os.ReadFile(filepath.Join(nd.c.confDir, nd.confName)); err != nil || string(b) != nd.conflist {
		t.Errorf("installed %s differs from the ConfigMap's (%v)", nd.confName, err)
	}
	log := in.log()
	for _, line := range []string{"installed /host/opt/cni/bin/cniplugins", "installed /host/etc/cni/net.d/" + nd.confName} {
		if !strings.Contains(log, line) {
			t.Errorf("the installer's log lacks %q:\n%s", line, log)
		}
	}

	// Pods of four namespaces, through bridge → ipam-delegated →
	// ipam-ds-args → ipam-da-pools as installed.
	var pods []pod
	for _, c := range []struct {
		namespace string
		third     byte
	}{{"team-a", 10}, {"team-b", 20}, {"kube-system", 30}, {"default", 40}} {
		p := nd.runPod(t, c.namespace, "web")
		if !inSubnet(p.ip, tenantsSecond, c.third) {
			t.Errorf("pod of %s got %s, want 10.%d.%d.0/24", c.namespace, p.ip, tenantsSecond, c.third)
		}
		pods = append(pods, p)
	}
	ls := nd.leases(t)
	for _, p := range pods {
		if l, ok := leaseOf(ls, p.id); !ok || l.Address != p.ip.String() {
			t.Errorf("pod %s/%s: reservation %+v (found %v), want %s", p.namespace, p.name, l, ok, p.ip)
		}
	}
	if len(ls) != len(pods) {
		t.Errorf("%d pods, %d reservations: %+v", len(pods), len(ls), ls)
	}
	for _, p := range pods {
		nd.c.removePod(t, p)
	}
	if ls := nd.leases(t); len(ls) != 0 {
		t.Errorf("reservations after every pod went: %+v", ls)
	}
}

// While a loop execs the installed personalities (ADD, version, DEL,
// again and again), the image of another version installs over the
// first: no exec fails, and the version answered switches exactly once.
func TestImageUpgradeUnderLoad(t *testing.T) {
	nd := newNode(t)
	dir := t.TempDir()
	if err := testkit.MakeIn(dir, []string{"VERSION=" + v2, "STRIP="}, "cniplugins-full"); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "cniplugins-full")
	ref1 := nd.importImage(t, imageOf(t, v1Binary(), v1), v1)
	ref2 := nd.importImage(t, imageOf(t, newer, v2), v2)
	nd.install(t, ref1)

	l := &load{nd: nd, conf: nd.ipamConf(t)}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); l.run(stop) }()
	halt := sync.OnceFunc(func() { close(stop); <-done })
	defer halt()
	l.waitFor(t, 3)
	in := nd.runInstaller(t, ref2, "--watch=false")
	if code := in.wait(t); code != 0 {
		t.Fatalf("the installer of %s exited %d; its log:\n%s", ref2, code, in.log())
	}
	during := l.count()
	l.waitFor(t, during+3)
	halt()

	samples := l.results()
	var versions []string
	switches, failed := 0, 0
	for i, s := range samples {
		if s.err != nil {
			failed++
			t.Errorf("iteration %d: %v", i, s.err)
			continue
		}
		if len(versions) > 0 && versions[len(versions)-1] != s.version {
			switches++
		}
		versions = append(versions, s.version)
	}
	t.Logf("%d iterations (ADD, version, DEL: %d execs), %d before the new installer exited; %d failed; versions %v", len(samples), 3*len(samples), during, failed, compress(versions))
	if len(versions) == 0 || versions[0] != v1 || versions[len(versions)-1] != v2 || switches != 1 {
		t.Errorf("versions answered %v: want %s, then %s, switching exactly once (%d switches)", compress(versions), v1, v2, switches)
	}
	if !sameBytes(t, filepath.Join(nd.bin, "cniplugins"), newer) {
		t.Error("after the upgrade, the installed cniplugins is not the new image's binary")
	}
	for _, n := range testkit.DirNames(t, nd.bin) {
		if strings.HasSuffix(n, ".tmp") {
			t.Errorf("the upgrade left %s in the bin dir", n)
		}
	}
	if ls := nd.leases(t); len(ls) != 0 {
		t.Errorf("every ADD had its DEL, yet reservations remain: %+v", ls)
	}
}

// The DaemonSet's container stays: its GC loop releases a reservation no
// sandbox owns and none a live pod holds; a ConfigMap update reaches the
// node's net.d; SIGTERM ends it with exit 0.
func TestImageWatchAndGCLoop(t *testing.T) {
	nd := newNode(t)
	ref := nd.importImage(t, imageOf(t, v1Binary(), v1), v1)
	nd.install(t, ref)
	live := nd.runPod(t, "team-b", "db")
	// A leak: an ADD whose sandbox the runtime never recorded.
	leak := nd.add(t, "leaked-sandbox-1", "default")
	// Nomad's allocation on the same node: its own network over the same
	// pools and data dir, from a conflist containerd does not load. It is
	// never in containerd's list, and never the GC loop's to release.
	nomadConf := nd.renamed(t, "nomad-batch")
	nomadCall := nd.call(nomadConf, "ADD", "nomad-alloc-1", "default")
	testbin.MustSucceed(t, nomadCall)
	nomadCall.Command = "DEL"
	t.Cleanup(func() { testbin.MustSucceed(t, nomadCall) })
	if ls := nd.leases(t); len(ls) != 3 {
		t.Fatalf("a pod, a leak and Nomad's allocation, %d reservations: %+v", len(ls), ls)
	}

	in := nd.runInstaller(t, ref, "--interval=1s", "--gc-interval=1s", "--gc-min-age=0s")
	var ls []lease
	for range 600 {
		if ls = nd.leases(t); len(ls) < 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	l, ok := leaseOf(ls, live.id)
	_, nomadKept := leaseOf(ls, "nomad-alloc-1")
	if !ok || l.Address != live.ip.String() || !nomadKept || len(ls) != 2 {
		t.Fatalf("after the GC loop: %+v; want only the live pod's %s and Nomad's allocation (the leak %s released)\nlog:\n%s", ls, live.ip, leak, in.log())
	}
	log := in.log()
	if !strings.Contains(log, "gc: released "+leak.String()) || strings.Contains(log, "could not release") {
		t.Errorf("the log does not say it released %s (and only that):\n%s", leak, log)
	}
	if want := "gc: networks covered: k8s-tenants; left alone 1 reservations of other networks (nomad-batch 1)"; !strings.Contains(log, want) {
		t.Errorf("the log does not say %q:\n%s", want, log)
	}

	installed := filepath.Join(nd.c.confDir, nd.confName)
	changed := strings.Replace(nd.conflist, `"_comment": "`, `"_comment": "Updated. `, 1)
	if changed == nd.conflist {
		t.Fatal("the ConfigMap's conflist has no _comment to change")
	}
	if err := nd.configMap.Update(map[string]string{nd.confName: changed}); err != nil {
		t.Fatal(err)
	}
	for range 600 {
		if b, _ := os.ReadFile(installed); string(b) == changed {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b, _ := os.ReadFile(installed); string(b) != changed {
		t.Errorf("a minute after the ConfigMap's update, net.d's %s is not the new one\nlog:\n%s", nd.confName, in.log())
	}

	if code := in.stop(t); code != 0 || !strings.Contains(in.log(), "stopping") {
		t.Errorf("after SIGTERM the installer exited %d; log:\n%s", code, in.log())
	}
	if _, err := os.Stat(filepath.Join(nd.bin, "ipam-da-pools")); err != nil {
		t.Errorf("after the installer stopped: %v; what it installed stays", err)
	}
}

// ipamConf is the network configuration a runtime sends the installed
// conflist's first plugin: its IPAM is the tenants chain.
func (nd *node) ipamConf(t *testing.T) []byte {
	t.Helper()
	var list struct {
		Name    string            `json:"name"`
		Plugins []json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(nd.conflist), &list); err != nil || len(list.Plugins) == 0 {
		t.Fatalf("the conflist: %v", err)
	}
	// The plugin's own keys, with the list's version and name, as a
	// runtime sends them.
	var plugin map[string]json.RawMessage
	if err := json.Unmarshal(list.Plugins[0], &plugin); err != nil {
		t.Fatal(err)
	}
	plugin["cniVersion"], _ = json.Marshal("1.0.0")
	plugin["name"], _ = json.Marshal(list.Name)
	conf, err := json.Marshal(plugin)
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

// renamed is ipamConf under another network's name: another runtime's
// network of the same pools and data dir.
func (nd *node) renamed(t *testing.T, name string) []byte {
	t.Helper()
	var conf map[string]any
	if err := json.Unmarshal(nd.ipamConf(t), &conf); err != nil {
		t.Fatal(err)
	}
	conf["name"] = name
	b, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call is an exec of the installed ipam-delegated as the bridge plugin
// makes it for a pod of namespace.
func (nd *node) call(conf []byte, command, id, namespace string) testbin.Call {
	return testbin.Call{
		Plugin: "ipam-delegated", Command: command, ContainerID: id, IfName: "eth0",
		Netns: "/var/run/netns/" + id, Path: nd.bin, Stdin: conf,
		Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + namespace + ";K8S_POD_NAME=" + id,
	}
}

// add reserves an address as a pod's ADD would, with no sandbox.
func (nd *node) add(t *testing.T, id, namespace string) netip.Addr {
	t.Helper()
	r := testbin.MustSucceed(t, nd.call(nd.ipamConf(t), "ADD", id, namespace))
	ip, err := resultIP(r.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

func resultIP(stdout []byte) (netip.Addr, error) {
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(stdout, &res); err != nil || len(res.IPs) != 1 {
		return netip.Addr{}, fmt.Errorf("ADD printed %s (%v), want one address", stdout, err)
	}
	p, err := netip.ParsePrefix(res.IPs[0].Address)
	return p.Addr(), err
}

// load execs the installed personalities in a loop: ADD, `cniplugins
// version`, DEL.
type load struct {
	nd      *node
	conf    []byte
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	version string
	err     error
}

// run iterates until stop is closed (at most 100,000 times).
func (l *load) run(stop <-chan struct{}) {
	for i := range 100000 {
		select {
		case <-stop:
			return
		default:
		}
		s := l.once(i)
		l.mu.Lock()
		l.samples = append(l.samples, s)
		l.mu.Unlock()
	}
}

func (l *load) once(i int) sample {
	id := fmt.Sprintf("load-%d", i)
	add := testbin.Run(l.nd.call(l.conf, "ADD", id, "team-b"))
	if add.Exit != 0 {
		return sample{err: fmt.Errorf("ADD: exit %d: %s%s", add.Exit, add.Stdout, add.Stderr)}
	}
	if ip, err := resultIP(add.Stdout); err != nil || !inSubnet(ip, tenantsSecond, 20) {
		return sample{err: fmt.Errorf("ADD gave %s (%v), want team-b's pool", ip, err)}
	}
	v := testbin.Run(testbin.Call{Path: l.nd.bin, Plugin: "cniplugins", Argv: []string{"version"}})
	first, _, _ := strings.Cut(string(v.Stdout), "\n")
	version, ok := strings.CutPrefix(first, "cniplugins ")
	if v.Exit != 0 || !ok {
		return sample{err: fmt.Errorf("version: exit %d: %q %s", v.Exit, v.Stdout, v.Stderr)}
	}
	del := testbin.Run(l.nd.call(l.conf, "DEL", id, "team-b"))
	if del.Exit != 0 {
		return sample{version: version, err: fmt.Errorf("DEL: exit %d: %s%s", del.Exit, del.Stdout, del.Stderr)}
	}
	return sample{version: version}
}

func (l *load) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.samples)
}

func (l *load) results() []sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.samples)
}

// waitFor waits (at most 2 minutes) until n iterations are done.
func (l *load) waitFor(t *testing.T, n int) {
	t.Helper()
	for range 1200 {
		if l.count() >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the load loop did %d iterations in 2 minutes, want %d", l.count(), n)
}

// compress is a version sequence with runs collapsed: [a×3 b×5].
func compress(vs []string) []string {
	var out []string
	for i := 0; i < len(vs); {
		j := i
		for j < len(vs) && vs[j] == vs[i] {
			j++
		}
		out = append(out, fmt.Sprintf("%s×%d", vs[i], j-i))
		i = j
	}
	return out
}

func personalities(t *testing.T, binary string) []string {
	t.Helper()
	names, err := ctrimage.Personalities(binary)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func sameBytes(t *testing.T, a, b string) bool {
	t.Helper()
	ba, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ba, bb)
}
