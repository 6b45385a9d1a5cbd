package integration

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// argsNetwork is one network whose pools ipam-ds-args picks: tenants by
// Kubernetes namespace (tenant-a may pick its fast pool by annotation),
// podman containers by name, Nomad jobs by namespace and job.
func argsNetwork(dataDir string) map[string]any {
	var ipam map[string]any
	if err := json.Unmarshal([]byte(`{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],
		"rules":[
			{"namespace":"tenant-a","pools":[{"name":"tenant-a","subnet":"10.211.10.0/24"}],"podChoice":["tenant-a","tenant-a-fast"]},
			{"namespace":"tenant-b","pools":[{"name":"tenant-b","subnet":"10.211.11.0/24"}]},
			{"podName":"db-*","pools":["db"]},
			{"podName":"web-*","pools":["web"]},
			{"namespace":"prod","args":{"NOMAD_JOB_ID":"api"},"pools":["nomad-api"]}],
		"poolDefinitions":{
			"tenant-a-fast":[{"subnet":"10.211.12.0/24"}],
			"db":[{"subnet":"10.211.13.0/24"}],
			"web":[{"subnet":"10.211.14.0/24"}],
			"nomad-api":[{"subnet":"10.211.15.0/24"}]}}`), &ipam); err != nil {
		panic(err)
	}
	ipam["dataDir"] = dataDir
	return map[string]any{"cniVersion": "1.1.0", "name": "argsnet", "ipam": ipam}
}

// invocation is a network config plus what one runtime adds to it: the
// runtimeConfig it injects for the capabilities it serves and args.
func invocation(network map[string]any, runtimeConfig, args map[string]any) []byte {
	conf := map[string]any{}
	for k, v := range network {
		conf[k] = v
	}
	if runtimeConfig != nil {
		conf["runtimeConfig"] = runtimeConfig
	}
	if args != nil {
		conf["args"] = args
	}
	b, _ := json.Marshal(conf)
	return b
}

func annotated(kv ...string) map[string]any {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return map[string]any{"io.kubernetes.cri.pod-annotations": m}
}

func criArgs(ns, pod string) string {
	return "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + pod + ";K8S_POD_INFRA_CONTAINER_ID=sandbox1;K8S_POD_UID=6f1c"
}

// poolReservations maps each pool of dataDir to its reserved addresses.
func poolReservations(t *testing.T, dataDir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	pools, err := os.ReadDir(filepath.Join(dataDir, "_pools"))
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		if strings.HasPrefix(p.Name(), "_") {
			continue
		}
		if got := reservations(t, filepath.Join(dataDir, "_pools", p.Name())); got != "" {
			out[p.Name()] = strings.Fields(got)
		}
	}
	return out
}

func onlyAddr(t *testing.T, stdout []byte) netip.Prefix {
	t.Helper()
	res := parseResult(t, stdout)
	if len(res.IPs) != 1 {
		t.Fatalf("result %s: want one address", stdout)
	}
	return netip.MustParsePrefix(res.IPs[0].Address)
}

// Each runtime's invocation, exactly as it makes it, lands in the pool its
// rule names; DEL with the same invocation frees it.
func TestDSArgsRuntimeShapes(t *testing.T) {
	tests := []struct {
		name, cniArgs, ifname string
		runtimeConfig         map[string]any
		pool, subnet          string
	}{
		{name: "containerd", cniArgs: criArgs("tenant-a", "shop-0"), runtimeConfig: annotated("team", "shop"),
			pool: "tenant-a", subnet: "10.211.10.0/24"},
		{name: "CRI-O", cniArgs: criArgs("tenant-b", "shop-0"),
			pool: "tenant-b", subnet: "10.211.11.0/24"},
		{name: "podman db", cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=db-1",
			runtimeConfig: map[string]any{"portMappings": []any{}, "aliases": map[string]any{"argsnet": []string{"db-1"}}},
			pool:          "db", subnet: "10.211.13.0/24"},
		{name: "podman web", cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=web-1", pool: "web", subnet: "10.211.14.0/24"},
		{name: "Nomad", ifname: "eth1",
			cniArgs: "IgnoreUnknown=true;NOMAD_REGION=global;NOMAD_NAMESPACE=prod;NOMAD_JOB_ID=api;NOMAD_GROUP_NAME=g;NOMAD_ALLOC_ID=8d3f",
			pool:    "nomad-api", subnet: "10.211.15.0/24"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			conf := invocation(argsNetwork(dataDir), tt.runtimeConfig, nil)
			id := fmt.Sprintf("shape%d", i)
			c := call("ipam-delegated", "ADD", id, conf)
			c.Args = tt.cniArgs
			if tt.ifname != "" {
				c.IfName = tt.ifname
			}
			r := testbin.MustSucceed(t, c)
			addr := onlyAddr(t, r.Stdout)
			if !netip.MustParsePrefix(tt.subnet).Contains(addr.Addr()) {
				t.Errorf("address %s, want one of pool %s (%s)", addr, tt.pool, tt.subnet)
			}
			if got, want := poolReservations(t, dataDir), map[string][]string{tt.pool: {addr.Addr().String()}}; !reflect.DeepEqual(got, want) {
				t.Errorf("reservations %v, want %v", got, want)
			}
			check := c
			check.Command = "CHECK"
			check.Stdin = withPrevResult(t, conf, r.Stdout)
			testbin.MustSucceed(t, check)
			del := check
			del.Command = "DEL"
			testbin.MustSucceed(t, del)
			if got := poolReservations(t, dataDir); len(got) != 0 {
				t.Errorf("after DEL: %v, want nothing reserved", got)
			}
		})
	}
}

// withPrevResult is conf with prevResult set, as a runtime's CHECK and DEL
// send it.
func withPrevResult(t *testing.T, conf, result []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(conf, &m); err != nil {
		t.Fatal(err)
	}
	m["prevResult"] = result
	b, _ := json.Marshal(m)
	return b
}

// The security boundary: a pod's author writes its annotations, so an
// annotation naming another tenant's pool must fail (104) and reserve
// nothing anywhere.
func TestDSArgsTenantEscape(t *testing.T) {
	dataDir := t.TempDir()
	net := argsNetwork(dataDir)
	for _, tt := range []struct {
		name, ns      string
		runtimeConfig map[string]any
		args          map[string]any
		code          uint
		details       []string
	}{
		{name: "tenant-b names tenant-a's pool", ns: "tenant-b", runtimeConfig: annotated("cniplugins.io/pools", "tenant-a"),
			code: 104, details: []string{`pool="tenant-a"`, "annotation cniplugins.io/pools", "ipam.rules[1]"}},
		{name: "tenant-a names tenant-b's pool beside its own", ns: "tenant-a", runtimeConfig: annotated("cniplugins.io/pools", "tenant-a-fast,tenant-b"),
			code: 104, details: []string{`pool="tenant-b"`, "ipam.rules[0]", "[tenant-a tenant-a-fast]"}},
		{name: "tenant-b via Multus cni-args", ns: "tenant-b", args: map[string]any{"cni": map[string]any{"pools": []string{"tenant-a-fast"}}},
			code: 104, details: []string{`pool="tenant-a-fast"`, "args.cni.pools"}},
		{name: "tenant-b asks for tenant-a's address", ns: "tenant-b", runtimeConfig: annotated("cniplugins.io/ip", "10.211.10.7"),
			code: 101, details: []string{"10.211.10.7", "[tenant-b]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := call("ipam-delegated", "ADD", "escape", invocation(net, tt.runtimeConfig, tt.args))
			c.Args = criArgs(tt.ns, "intruder")
			r := testbin.Run(c)
			e := r.Err()
			if e == nil || e.Code != tt.code {
				t.Fatalf("exit %d, error %+v; want code %d", r.Exit, e, tt.code)
			}
			for _, d := range tt.details {
				if !strings.Contains(e.Details, d) {
					t.Errorf("details %q do not name %s", e.Details, d)
				}
			}
			if !strings.HasPrefix(e.Msg, "ipam-ds-args: ") {
				t.Errorf("msg %q: want the selector named", e.Msg)
			}
			if got := poolReservations(t, dataDir); len(got) != 0 {
				t.Errorf("a refused ADD reserved %v", got)
			}
		})
	}
}

// An address chosen by annotation (pool and ip) is freed by a DEL that
// carries neither the annotations nor the namespace: DEL names every pool.
func TestDSArgsDelWithoutAnnotations(t *testing.T) {
	dataDir := t.TempDir()
	net := argsNetwork(dataDir)
	add := call("ipam-delegated", "ADD", "chosen", invocation(net, annotated("cniplugins.io/pools", "tenant-a-fast", "cniplugins.io/ip", "10.211.12.77"), nil))
	add.Args = criArgs("tenant-a", "fast-0")
	r := testbin.MustSucceed(t, add)
	if addr := onlyAddr(t, r.Stdout); addr.String() != "10.211.12.77/24" {
		t.Fatalf("ADD got %s, want the annotated 10.211.12.77/24", addr)
	}
	// A neighbour in the tenant's default pool stays.
	other := call("ipam-delegated", "ADD", "neighbour", invocation(net, nil, nil))
	other.Args = criArgs("tenant-a", "plain-0")
	o := onlyAddr(t, testbin.MustSucceed(t, other).Stdout)
	want := map[string][]string{"tenant-a-fast": {"10.211.12.77"}, "tenant-a": {o.Addr().String()}}
	if got := poolReservations(t, dataDir); !reflect.DeepEqual(got, want) {
		t.Fatalf("reservations %v, want %v", got, want)
	}

	// No CNI_ARGS, no runtimeConfig, no prevResult: all a runtime that
	// lost its cache can still send.
	del := call("ipam-delegated", "DEL", "chosen", invocation(net, nil, nil))
	testbin.MustSucceed(t, del)
	want = map[string][]string{"tenant-a": {o.Addr().String()}}
	if got := poolReservations(t, dataDir); !reflect.DeepEqual(got, want) {
		t.Errorf("after DEL without annotations: %v, want %v", got, want)
	}
	// GC with only the neighbour valid changes nothing more; STATUS is fine.
	gcConf := invocation(net, nil, nil)
	gcConf = []byte(strings.Replace(string(gcConf), `"name":"argsnet"`, `"name":"argsnet","cni.dev/valid-attachments":[{"containerID":"neighbour","ifname":"eth0"}]`, 1))
	for _, cmd := range []string{"GC", "STATUS"} {
		c := call("ipam-delegated", cmd, "", gcConf)
		c.ContainerID, c.IfName, c.Netns = "", "", ""
		testbin.MustSucceed(t, c)
	}
	if got := poolReservations(t, dataDir); !reflect.DeepEqual(got, want) {
		t.Errorf("after GC: %v, want %v", got, want)
	}
}

// No rule and no default: 103, with what the attachment presented.
func TestDSArgsNoPoolSelected(t *testing.T) {
	dataDir := t.TempDir()
	c := call("ipam-delegated", "ADD", "lost", invocation(argsNetwork(dataDir), annotated("team", "x"), nil))
	c.Args = criArgs("tenant-z", "lost-0")
	e := testbin.Run(c).Err()
	if e == nil || e.Code != 103 {
		t.Fatalf("error %+v, want 103", e)
	}
	for _, d := range []string{`namespace="tenant-z"`, `podName="lost-0"`, `ifname="eth0"`, "K8S_POD_UID", "annotations=[team]"} {
		if !strings.Contains(e.Details, d) {
			t.Errorf("103 details %q do not show %s", e.Details, d)
		}
	}
	if got := poolReservations(t, dataDir); len(got) != 0 {
		t.Errorf("a refused ADD reserved %v", got)
	}
}

// CNI_ARGS follows the cni library's rules per personality: a key the
// config does not name needs IgnoreUnknown; a key a rule matches on does
// not. (In a chain the allocator checks CNI_ARGS against its own keys too,
// which is why every runtime sends IgnoreUnknown.)
func TestDSArgsCNIArgsKeys(t *testing.T) {
	conf := invocation(argsNetwork(t.TempDir()), nil, nil)
	c := call("ipam-ds-args", "ADD", "keys", conf)
	c.Args = "NOMAD_NAMESPACE=prod;NOMAD_JOB_ID=api"
	if r := testbin.Run(c); r.Exit != 0 {
		t.Errorf("keys the rules name, without IgnoreUnknown: exit %d %s", r.Exit, r.Stdout)
	}
	c.ContainerID = "keys2"
	c.Args = "NOMAD_NAMESPACE=prod;NOMAD_JOB_ID=api;NOMAD_ALLOC_ID=1"
	if e := testbin.Run(c).Err(); e == nil || e.Code != 4 || !strings.Contains(e.Msg, "NOMAD_ALLOC_ID") {
		t.Errorf("an unknown key without IgnoreUnknown: %+v, want 4 naming it", e)
	}
}

// ipam-delegated → ipam-ds-args → allocator: a rule with "sticky": true
// (namespace db) hands the allocator "sticky": {"key": "<ns>/<pod>"} in
// its prevResult, on ADD and DEL, whether the selector runs in-process or
// is exec'd; a namespace whose rule is not sticky hands it none. The
// allocator is test-echo, which records its prevResult.
func TestDSArgsStickyKeyReachesAllocator(t *testing.T) {
	var ipam map[string]any
	if err := json.Unmarshal([]byte(`{"type":"ipam-delegated","delegates":["ipam-ds-args","test-echo"],
		"rules":[
			{"namespace":"db","sticky":true,"pools":[{"name":"db","subnet":"10.211.20.0/24"}]},
			{"namespace":"*","pools":[{"name":"web","subnet":"10.211.21.0/24"}]}]}`), &ipam); err != nil {
		t.Fatal(err)
	}
	network := map[string]any{"cniVersion": "1.1.0", "name": "stickynet", "ipam": ipam}
	conf := invocation(network, annotated("team", "db"), nil)
	dbPrev := `{"cniVersion":"1.1.0","pools":[{"name":"db","subnet":"10.211.20.0/24"}],"sticky":{"by":"pod","key":"db/pg-0"}}`
	for _, mode := range []struct {
		name string
		env  []string
	}{{"in-process", nil}, {"exec'd", []string{"CNIPLUGINS_EXEC_DELEGATES=1"}}} {
		t.Run(mode.name, func(t *testing.T) {
			rec := t.TempDir()
			c := call("ipam-delegated", "ADD", "pg0", conf)
			c.Args, c.Env = criArgs("db", "pg-0"), append([]string{"TEST_RECORD=" + rec}, mode.env...)
			r := testbin.MustSucceed(t, c)
			del := c
			del.Command, del.Stdin = "DEL", withPrevResult(t, conf, r.Stdout)
			testbin.MustSucceed(t, del)

			web := c
			web.ContainerID, web.Args = "web0", criArgs("web", "web-0")
			testbin.MustSucceed(t, web)

			want := []recorded{{"test-echo ADD", dbPrev}, {"test-echo DEL", compact([]byte(
				`{"cniVersion":"1.1.0","ips":[{"address":"10.211.20.5/24"}],"pools":[{"name":"db","subnet":"10.211.20.0/24"},{"name":"web","subnet":"10.211.21.0/24"}],"sticky":{"by":"pod","key":"db/pg-0"}}`))},
				{"test-echo ADD", `{"cniVersion":"1.1.0","pools":[{"name":"web","subnet":"10.211.21.0/24"}]}`}}
			if got := readRecord(t, rec); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the allocator's prevResults:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// The same chain with the real allocator: a sticky rule's selection is
// one ipam-da-pools accepts, ADD to DEL.
func TestDSArgsStickyWithDAPools(t *testing.T) {
	var ipam map[string]any
	if err := json.Unmarshal([]byte(`{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],
		"rules":[{"namespace":"db","sticky":true,"pools":[{"name":"db","subnet":"10.211.22.0/24"}]}]}`), &ipam); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	ipam["dataDir"] = dataDir
	conf := invocation(map[string]any{"cniVersion": "1.1.0", "name": "stickynet", "ipam": ipam}, nil, nil)
	c := call("ipam-delegated", "ADD", "pg0", conf)
	c.Args = criArgs("db", "pg-0")
	addr := onlyAddr(t, testbin.MustSucceed(t, c).Stdout)
	if !netip.MustParsePrefix("10.211.22.0/24").Contains(addr.Addr()) {
		t.Errorf("address %s, want one of pool db", addr)
	}
	if got := poolReservations(t, dataDir); !reflect.DeepEqual(got, map[string][]string{"db": {addr.Addr().String()}}) {
		t.Errorf("reservations %v", got)
	}
	del := c
	del.Command = "DEL"
	testbin.MustSucceed(t, del)
	// The selector's key made it sticky: held after DEL, and the pod
	// recreated under a new container ID gets it back.
	held, err := os.ReadFile(filepath.Join(dataDir, "_pools", "db", addr.Addr().String()))
	if err != nil || !strings.HasPrefix(string(held), "_sticky\r\n") {
		t.Fatalf("after DEL: %q %v, want the address held", held, err)
	}
	again := c
	again.ContainerID = "pg0-recreated"
	if got := onlyAddr(t, testbin.MustSucceed(t, again).Stdout); got != addr {
		t.Errorf("recreated pod got %s, want %s", got, addr)
	}
}
