package dsselect

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// input is one attachment as a runtime presents it.
type input struct {
	ifname        string // default eth0
	cniArgs       string // CNI_ARGS
	args          string // the config's args object
	runtimeConfig string // the config's runtimeConfig object
}

// argsEnvelope builds a config holding ipam (the keys inside "ipam", type
// included) and the input's args and runtimeConfig.
func argsEnvelope(t *testing.T, ipam string, in input) *netconf.Envelope {
	t.Helper()
	conf := `{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-ds-args",` + ipam + `}`
	if in.args != "" {
		conf += `,"args":` + in.args
	}
	if in.runtimeConfig != "" {
		conf += `,"runtimeConfig":` + in.runtimeConfig
	}
	env, err := netconf.Parse([]byte(conf + `}`))
	if err != nil {
		t.Fatalf("config %s: %v", conf, err)
	}
	return env
}

// chooseFor is ADD's choice for in, as pool names with their requested-ip
// ("name" or "name=ip"), or the error.
func chooseFor(t *testing.T, ipam string, in input) ([]string, error) {
	t.Helper()
	ch, err := chooseIn(t, ipam, in)
	var names []string
	for _, p := range ch.Pools {
		if p.RequestedIP != "" {
			names = append(names, p.Name+"="+p.RequestedIP)
		} else {
			names = append(names, p.Name)
		}
	}
	return names, err
}

// chooseIn is ADD's choice for in, or the error.
func chooseIn(t *testing.T, ipam string, in input) (pool.Selection, error) {
	t.Helper()
	env := argsEnvelope(t, ipam, in)
	c, err := parseArgsConfig(env)
	if err != nil {
		return pool.Selection{}, err
	}
	keys, err := argsArgKeys(env)
	if err != nil {
		t.Fatal(err)
	}
	cniArgs, err := netconf.ParseCNIArgs(in.cniArgs, keys)
	if err != nil {
		t.Fatal(err)
	}
	ifname := in.ifname
	if ifname == "" {
		ifname = "eth0"
	}
	a, err := normalise(ifname, cniArgs, env, c.namespaceFrom)
	if err != nil {
		return pool.Selection{}, err
	}
	return c.choose(a)
}

func annotations(kv ...string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(map[string]any{podAnnotationsCap: m})
	return string(b)
}

// k8sArgs is CNI_ARGS as containerd's CRI plugin and CRI-O send it.
func k8sArgs(ns, pod string) string {
	return "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + pod + ";K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u1"
}

// tenants is a namespace-per-tenant config: each tenant may pick its own
// fast pool by annotation, never another tenant's.
const tenants = `"rules":[
	{"namespace":"tenant-a","pools":[{"name":"a","subnet":"10.211.1.0/24"}],"podChoice":["a","a-fast"]},
	{"namespace":"tenant-b","pools":[{"name":"b","subnet":"10.211.2.0/24"}],"podChoice":["b"]},
	{"namespace":"tenant-c","pools":["c"]}],
	"poolDefinitions":{"a-fast":[{"subnet":"10.211.3.0/24"}],"c":{"ranges":[{"subnet":"10.211.4.0/24"}],"exclude":["10.211.4.9"]}}`

func TestArgsRuleMatching(t *testing.T) {
	tests := []struct {
		name string
		ipam string
		in   input
		want []string
		code uint
	}{
		// Each match key.
		{name: "namespace (K8S)", ipam: tenants, in: input{cniArgs: k8sArgs("tenant-b", "p")}, want: []string{"b"}},
		{name: "namespace (Nomad)", ipam: `"rules":[{"namespace":"prod","pools":["p"]}]`,
			in: input{cniArgs: "IgnoreUnknown=true;NOMAD_REGION=global;NOMAD_NAMESPACE=prod;NOMAD_JOB_ID=web"}, want: []string{"p"}},
		{name: "K8S and Nomad namespaces that differ are refused, neither preferred", ipam: `"rules":[{"namespace":"k","pools":["k"]},{"namespace":"n","pools":["n"]}]`,
			in: input{cniArgs: "K8S_POD_NAMESPACE=k;NOMAD_NAMESPACE=n"}, code: 7},
		{name: "podName glob", ipam: `"rules":[{"podName":"web-*","pools":["web"]},{"podName":"db-?","pools":["db"]}]`,
			in: input{cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=db-1"}, want: []string{"db"}},
		{name: "character class", ipam: `"rules":[{"podName":"[a-c]*","pools":["abc"]}],"defaultPools":["other"]`,
			in: input{cniArgs: "K8S_POD_NAME=delta"}, want: []string{"other"}},
		{name: "star stops at slash (path.Match)", ipam: `"rules":[{"annotations":{"team":"*"},"pools":["t"]}],"defaultPools":["d"]`,
			in: input{runtimeConfig: annotations("team", "a/b")}, want: []string{"d"}},
		{name: "ifname", ipam: `"rules":[{"ifname":"net1","pools":["second"]},{"pools":["first"]}]`,
			in: input{ifname: "net1"}, want: []string{"second"}},
		{name: "args key", ipam: `"rules":[{"args":{"NOMAD_JOB_ID":"db-*"},"pools":["db"]},{"args":{"NOMAD_JOB_ID":"*"},"pools":["jobs"]}]`,
			in: input{cniArgs: "IgnoreUnknown=true;NOMAD_NAMESPACE=default;NOMAD_JOB_ID=web"}, want: []string{"jobs"}},
		{name: "args key absent never matches, not even *", ipam: `"rules":[{"args":{"TIER":"*"},"pools":["t"]}],"defaultPools":["d"]`,
			in: input{cniArgs: "K8S_POD_NAME=x"}, want: []string{"d"}},
		{name: "args from Multus args.cni", ipam: `"rules":[{"args":{"tier":"gold"},"pools":["gold"]}]`,
			in: input{args: `{"cni":{"tier":"gold"}}`}, want: []string{"gold"}},
		{name: "CNI_ARGS wins over args.cni", ipam: `"rules":[{"args":{"tier":"evil"},"pools":["x"]}],"defaultPools":["d"]`,
			in: input{cniArgs: "IgnoreUnknown=1;tier=good", args: `{"cni":{"tier":"evil"}}`}, want: []string{"d"}},
		{name: "a pod name in args.cni unlike CNI_ARGS' is refused", ipam: `"rules":[{"args":{"K8S_POD_NAME":"evil"},"pools":["x"]}],"defaultPools":["d"]`,
			in: input{cniArgs: "K8S_POD_NAME=good", args: `{"cni":{"K8S_POD_NAME":"evil"}}`}, code: 7},
		{name: "labels (CONVENTIONS.md)", ipam: `"rules":[{"labels":{"app":"db"},"pools":["db"]},{"pools":["rest"]}]`,
			in: input{args: `{"cni":{"labels":[{"key":"tier","value":"x"},{"key":"app","value":"db"}]}}`}, want: []string{"db"}},
		{name: "annotations", ipam: `"rules":[{"annotations":{"example.com/net":"fast*"},"pools":["fast"]},{"pools":["slow"]}]`,
			in: input{runtimeConfig: annotations("example.com/net", "fast-1")}, want: []string{"fast"}},
		{name: "value absent never matches, not even *", ipam: `"rules":[{"namespace":"*","pools":["ns"]}],"defaultPools":["d"]`,
			in: input{cniArgs: "K8S_POD_NAME=x"}, want: []string{"d"}},

		// Combination, order, defaults.
		{name: "every key must match", ipam: `"rules":[{"namespace":"a","podName":"db-*","pools":["a-db"]},{"namespace":"a","pools":["a"]}]`,
			in: input{cniArgs: k8sArgs("a", "web-1")}, want: []string{"a"}},
		{name: "first match wins", ipam: `"rules":[{"namespace":"a*","pools":["first"]},{"namespace":"ab","pools":["second"]}]`,
			in: input{cniArgs: k8sArgs("ab", "p")}, want: []string{"first"}},
		{name: "rule without match keys matches all", ipam: `"rules":[{"namespace":"x","pools":["x"]},{"pools":["all","all6"]}]`,
			in: input{}, want: []string{"all", "all6"}},
		{name: "defaults", ipam: tenants + `,"defaultPools":[{"name":"shared","subnet":"10.211.9.0/24"}]`,
			in: input{cniArgs: k8sArgs("tenant-z", "p")}, want: []string{"shared"}},
		{name: "defaults alone", ipam: `"defaultPools":["d"]`, in: input{}, want: []string{"d"}},
		{name: "no match, no default", ipam: tenants, in: input{cniArgs: k8sArgs("tenant-z", "p")}, code: 103},

		// The attachment's own choice.
		{name: "podChoice allowed (annotation)", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-a", "p"), runtimeConfig: annotations(annotationPools, "a-fast, a")}, want: []string{"a-fast", "a"}},
		{name: "podChoice allowed (args.cni.pools)", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-a", "p"), args: `{"cni":{"pools":["a-fast"]}}`}, want: []string{"a-fast"}},
		{name: "tenant escape: another tenant's pool", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-a", "p"), runtimeConfig: annotations(annotationPools, "b")}, code: 104},
		{name: "tenant escape: one allowed, one not", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-b", "p"), args: `{"cni":{"pools":["b","a-fast"]}}`}, code: 104},
		{name: "choice where the rule has no podChoice", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-c", "p"), runtimeConfig: annotations(annotationPools, "c")}, code: 104},
		{name: "choice on the defaults", ipam: `"defaultPools":["d"]`,
			in: input{runtimeConfig: annotations(annotationPools, "d")}, code: 104},
		{name: "choice cannot make a rule match", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-z", "p"), runtimeConfig: annotations(annotationPools, "a")}, code: 103},

		// cniplugins.io/ip.
		{name: "ip to the pool holding it (inline)", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-a", "p"), runtimeConfig: annotations(annotationIP, "10.211.1.7")}, want: []string{"a=10.211.1.7"}},
		{name: "ip to the pool holding it (poolDefinitions range set)", ipam: tenants,
			in:   input{cniArgs: k8sArgs("tenant-a", "p"), runtimeConfig: annotations(annotationPools, "a,a-fast", annotationIP, "10.211.3.20")},
			want: []string{"a", "a-fast=10.211.3.20"}},
		{name: "ip to the pool holding it (poolDefinitions object)", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-c", "p"), runtimeConfig: annotations(annotationIP, "10.211.4.20")}, want: []string{"c=10.211.4.20"}},
		{name: "ip: a definition no selected pool needs is the allocator's to validate",
			ipam: `"defaultPools":[{"name":"a","subnet":"10.211.1.0/24"}],"poolDefinitions":{"z":{"ranges":[{"subnet":"10.211.9.1/24"}]}}`,
			in:   input{runtimeConfig: annotations(annotationIP, "10.211.1.7")}, want: []string{"a=10.211.1.7"}},
		{name: "ip: a selected pool's broken definition", ipam: `"defaultPools":["d"],"poolDefinitions":{"d":{"ranges":[{"subnet":"10.211.5.1/24"}]}}`,
			in: input{runtimeConfig: annotations(annotationIP, "10.211.5.7")}, code: 7},
		{name: "ip in no selected pool", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-a", "p"), runtimeConfig: annotations(annotationIP, "10.211.2.5")}, code: 101},
		{name: "two ips in one pool", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-a", "p"), runtimeConfig: annotations(annotationIP, "10.211.1.7,10.211.1.8")}, code: 101},
		{name: "ip not an address", ipam: tenants,
			in: input{cniArgs: k8sArgs("tenant-a", "p"), runtimeConfig: annotations(annotationIP, "10.211.1.300")}, code: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseFor(t, tt.ipam, tt.in)
			if code := cnierr.Code(err); code != tt.code {
				t.Fatalf("code %d (%v), want %d", code, err, tt.code)
			}
			if tt.code == 0 && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("pools %v, want %v", got, tt.want)
			}
		})
	}
}

// 103 and 104 say enough to fix the config or the pod without a debugger.
func TestArgsErrorDetails(t *testing.T) {
	_, err := chooseFor(t, tenants, input{cniArgs: k8sArgs("tenant-z", "web-1"), ifname: "net1",
		args: `{"cni":{"labels":[{"key":"app","value":"web"}]}}`, runtimeConfig: annotations("team", "x")})
	e := cnierr.As(err)
	for _, want := range []string{`namespace="tenant-z"`, `podName="web-1"`, `ifname="net1"`, "K8S_POD_UID", "labels=[app]", "annotations=[team]"} {
		if e.Code != 103 || !strings.Contains(e.Details, want) {
			t.Errorf("103 details %q (code %d): want %s", e.Details, e.Code, want)
		}
	}
	_, err = chooseFor(t, tenants, input{cniArgs: k8sArgs("tenant-a", "p"), runtimeConfig: annotations(annotationPools, "b")})
	e = cnierr.As(err)
	for _, want := range []string{`pool="b"`, "annotation cniplugins.io/pools", "ipam.rules[0]", "[a a-fast]"} {
		if e.Code != 104 || !strings.Contains(e.Details, want) {
			t.Errorf("104 details %q (code %d): want %s", e.Details, e.Code, want)
		}
	}
}

func TestArgsConfigRejects(t *testing.T) {
	tests := []struct{ name, ipam, field string }{
		{"nothing to select", `"rules":[]`, "ipam.rules"},
		{"missing", `"x":1`, "ipam.rules"},
		{"rule not an object", `"rules":[5]`, "ipam.rules[0]"},
		{"pools missing", `"rules":[{"namespace":"a"}]`, "ipam.rules[0].pools"},
		{"pools empty", `"rules":[{"pools":[]}]`, "ipam.rules[0].pools"},
		{"pool name escapes", `"rules":[{"pools":["../x"]}]`, "ipam.rules[0].pools[0].name"},
		{"misspelt match key", `"rules":[{"namepsace":"a","pools":["a"]}]`, "ipam.rules[0].namepsace"},
		{"malformed namespace glob", `"rules":[{"namespace":"[a","pools":["a"]}]`, "ipam.rules[0].namespace"},
		{"malformed podName glob", `"rules":[{"podName":"a\\","pools":["a"]}]`, "ipam.rules[0].podName"},
		{"malformed ifname glob", `"rules":[{"ifname":"[]","pools":["a"]}]`, "ipam.rules[0].ifname"},
		{"malformed args glob", `"rules":[{"args":{"K":"[z-"},"pools":["a"]}]`, "ipam.rules[0].args.K"},
		{"malformed labels glob", `"rules":[{"labels":{"app":"x["},"pools":["a"]}]`, "ipam.rules[0].labels.app"},
		{"malformed annotations glob", `"rules":[{"pools":["a"]},{"annotations":{"k":"[^"},"pools":["a"]}]`, "ipam.rules[1].annotations.k"},
		{"empty pattern", `"rules":[{"podName":"","pools":["a"]}]`, "ipam.rules[0].podName"},
		{"empty key", `"rules":[{"labels":{"":"x"},"pools":["a"]}]`, "ipam.rules[0].labels"},
		{"pattern not a string", `"rules":[{"namespace":5,"pools":["a"]}]`, "ipam.rules[0].namespace"},
		{"bad podChoice name", `"rules":[{"pools":["a"],"podChoice":["a/b"]}]`, "ipam.rules[0].podChoice[0]"},
		{"podChoice twice", `"rules":[{"pools":["a"],"podChoice":["x","x"]}]`, "ipam.rules[0].podChoice[1]"},
		{"one name, two pools", `"rules":[{"pools":[{"name":"a","subnet":"10.211.1.0/24"}]}],"defaultPools":[{"name":"a","subnet":"10.211.2.0/24"}]`, "ipam.defaultPools[0]"},
		{"bad default", `"rules":[{"pools":["a"]}],"defaultPools":[{"name":"d","subnet":"10.211.0.1/24"}]`, "ipam.defaultPools[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Args().Validate(argsEnvelope(t, tt.ipam, input{}))
			e := cnierr.As(err)
			if e == nil || e.Code != 7 || !strings.Contains(e.Msg+" "+e.Details, tt.field) {
				t.Errorf("got %v; want code 7 naming %s", err, tt.field)
			}
		})
	}
}

func TestArgsArgKeys(t *testing.T) {
	keys, err := argsArgKeys(argsEnvelope(t, `"rules":[{"args":{"NOMAD_JOB_ID":"x","TIER":"*"},"pools":["a"]},{"args":{"TIER":"y"},"pools":["a"]}]`, input{}))
	want := []string{"K8S_POD_NAMESPACE", "NOMAD_NAMESPACE", "K8S_POD_NAME", "NOMAD_JOB_ID", "TIER", "IP", "CNIPLUGINS_STICKY_KEY"}
	if err != nil || !reflect.DeepEqual(keys, want) {
		t.Errorf("ArgKeys = %v, %v; want %v", keys, err, want)
	}
	// The allocator's sticky-key source passes a selector without
	// IgnoreUnknown, as IP does: the chain hands both the same CNI_ARGS.
	conf := `{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-ds-args","defaultPools":["d"]}}`
	for _, p := range []plugin.Personality{Args(), Static()} {
		c := conf
		if p.Name == StaticName {
			c = strings.Replace(conf, `"type":"ipam-ds-args","defaultPools":["d"]`, `"type":"ipam-ds-static","pools":[{"name":"d","subnet":"10.211.1.0/24"}]`, 1)
		}
		var stdout, stderr bytes.Buffer
		env := []string{"CNI_COMMAND=ADD", "CNI_PATH=/opt/cni/bin", "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_ARGS=CNIPLUGINS_STICKY_KEY=vm-7;IP=10.211.1.9"}
		if exit := plugin.Run(p, plugin.IO{Environ: env, Stdin: strings.NewReader(c), Stdout: &stdout, Stderr: &stderr}); exit != 0 {
			t.Errorf("%s with CNIPLUGINS_STICKY_KEY: exit %d, %s", p.Name, exit, stdout.String())
		}
	}
}

// runArgs runs ipam-ds-args for cmd through the dispatcher and returns the
// exit code and the pools (names) or the error printed.
func runArgs(t *testing.T, cmd, conf string, env ...string) (int, []string, map[string]any) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	environ := append([]string{"CNI_COMMAND=" + cmd, "CNI_PATH=/opt/cni/bin"}, env...)
	exit := plugin.Run(Args(), plugin.IO{Environ: environ, Stdin: strings.NewReader(conf), Stdout: &stdout, Stderr: &stderr})
	var out map[string]any
	if stdout.Len() > 0 {
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("stdout not JSON: %s", stdout.String())
		}
	}
	var names []string
	pools, _ := out["pools"].([]any)
	for _, p := range pools {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	return exit, names, out
}

// DEL, GC and STATUS name every pool any rule, podChoice or default names,
// whatever the attachment presents: a DEL may carry less than its ADD.
func TestArgsUnionOnDelGCStatus(t *testing.T) {
	conf := `{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-ds-args",` + tenants + `,"defaultPools":["shared","a"]},
		"prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.211.3.20/24"}]}}`
	union := []string{"a", "b", "c", "shared", "a-fast"}
	attach := []string{"CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", "CNI_NETNS=/x"}
	for _, tc := range []struct {
		cmd string
		env []string
	}{
		{"DEL", attach},
		{"DEL", append(attach, "CNI_ARGS="+k8sArgs("tenant-b", "p"))},
		{"DEL", append(attach, "CNI_ARGS="+k8sArgs("tenant-nobody", "p"))},
		{"GC", nil},
		{"STATUS", nil},
	} {
		exit, names, out := runArgs(t, tc.cmd, conf, tc.env...)
		if exit != 0 || !reflect.DeepEqual(names, union) {
			t.Errorf("%s %v: exit %d, pools %v (%v); want %v", tc.cmd, tc.env, exit, names, out, union)
		}
		// The default's bare "a" is rule 0's pool, ranges and all.
		if p, _ := out["pools"].([]any); len(p) > 0 && p[0].(map[string]any)["subnet"] != "10.211.1.0/24" {
			t.Errorf("%s: pool a = %v, want its definition from ipam.rules[0]", tc.cmd, p[0])
		}
		// STATUS alone names the sets an ADD can be given: each rule's
		// pools, each pool a pod may choose, the defaults.
		choices, _ := json.Marshal(out["choices"])
		wantChoices := "null"
		if tc.cmd == "STATUS" {
			wantChoices = `[["a"],["a-fast"],["b"],["c"],["shared","a"]]`
		}
		if string(choices) != wantChoices {
			t.Errorf("%s: choices %s, want %s", tc.cmd, choices, wantChoices)
		}
		if tc.cmd == "DEL" {
			if ips, _ := json.Marshal(out["ips"]); string(ips) != `[{"address":"10.211.3.20/24"}]` {
				t.Errorf("DEL ips = %s, want prevResult's", ips)
			}
		}
	}
	// ADD and CHECK with the same inputs answer alike.
	for _, cmd := range []string{"ADD", "CHECK"} {
		exit, names, out := runArgs(t, cmd, conf, append(attach, "CNI_ARGS="+k8sArgs("tenant-b", "p"))...)
		if exit != 0 || !reflect.DeepEqual(names, []string{"b"}) {
			t.Errorf("%s: exit %d, pools %v (%v); want [b]", cmd, exit, names, out)
		}
	}
	// An invalid config fails every command alike.
	bad := strings.Replace(conf, `"namespace":"tenant-a"`, `"namespace":"[tenant-a"`, 1)
	for _, cmd := range []string{"ADD", "DEL", "GC", "STATUS"} {
		if exit, _, out := runArgs(t, cmd, bad, attach...); exit != 1 || out["code"] != float64(7) {
			t.Errorf("%s with a malformed glob: exit %d, %v; want code 7", cmd, exit, out)
		}
	}
}

// sticky is a namespace-per-tenant config where only db's rule is sticky.
const sticky = `"rules":[
	{"namespace":"db","pools":[{"name":"db","subnet":"10.211.5.0/24"}],"podChoice":["db","db-fast"],"sticky":true},
	{"namespace":"web","pools":["web"],"sticky":false},
	{"namespace":"cache","podName":"redis-*","pools":["cache"],"sticky":null},
	{"podName":"vm-*","pools":["vms"],"sticky":true},
	{"namespace":"kv","pools":["vms"],"sticky":"kubevirt"}],
	"defaultPools":["shared"],
	"poolDefinitions":{"db-fast":[{"subnet":"10.211.6.0/24"}]}`

// A sticky rule's attachments carry "<namespace>/<podName>", or, without
// either, their cniplugins.io/sticky-key annotation; everything else none.
func TestArgsStickyKey(t *testing.T) {
	nomad := "IgnoreUnknown=true;NOMAD_NAMESPACE=db;NOMAD_JOB_ID=pg"
	tests := []struct {
		name string
		in   input
		want string // the sticky key, "" for none
		by   string // its source, as the allocator is told
		pool string
		code uint
	}{
		{name: "StatefulSet pod in a sticky namespace", in: input{cniArgs: k8sArgs("db", "pg-0")}, want: "db/pg-0", by: "pod", pool: "db"},
		{name: "another interface, same key", in: input{cniArgs: k8sArgs("db", "pg-0"), ifname: "net1"}, want: "db/pg-0", by: "pod", pool: "db"},
		{name: "the pod's choice keeps the key", in: input{cniArgs: k8sArgs("db", "pg-1"), runtimeConfig: annotations(annotationPools, "db-fast")},
			want: "db/pg-1", by: "pod", pool: "db-fast"},
		{name: "the annotation never replaces namespace/pod", in: input{cniArgs: k8sArgs("db", "pg-0"), runtimeConfig: annotations(alloc.AnnotationStickyKey, "db/pg-9")},
			want: "db/pg-0", by: "pod", pool: "db"},
		{name: "sticky false", in: input{cniArgs: k8sArgs("web", "web-0")}, pool: "web"},
		{name: "sticky null", in: input{cniArgs: k8sArgs("cache", "redis-0")}, pool: "cache"},
		{name: "no rule matches: defaults are never sticky", in: input{cniArgs: k8sArgs("other", "pg-0")}, pool: "shared"},
		{name: "no pod name (Nomad): no key", in: input{cniArgs: nomad}, pool: "db"},
		{name: "no pod name (Nomad), annotated", in: input{cniArgs: nomad, runtimeConfig: annotations(alloc.AnnotationStickyKey, "pg-primary")},
			want: "db/pg-primary", by: "annotation", pool: "db"},
		{name: "an annotation naming another namespace's key is scoped to its own", in: input{cniArgs: nomad, runtimeConfig: annotations(alloc.AnnotationStickyKey, "web/pg-primary")},
			want: "db/web/pg-primary", by: "annotation", pool: "db"},
		{name: "an annotation already in its namespace's form", in: input{cniArgs: nomad, runtimeConfig: annotations(alloc.AnnotationStickyKey, "db/pg-primary")},
			want: "db/pg-primary", by: "annotation", pool: "db"},
		{name: "no namespace (podman): no key", in: input{cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=vm-1"}, pool: "vms"},
		{name: "no namespace (podman), annotated", in: input{cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=vm-1", runtimeConfig: annotations(alloc.AnnotationStickyKey, "vm-1-disk")},
			want: "vm-1-disk", by: "annotation", pool: "vms"},
		{name: "a KubeVirt VM: namespace and domain", in: input{cniArgs: k8sArgs("kv", "virt-launcher-pg-x1"), runtimeConfig: annotations(alloc.AnnotationKubevirtDomain, "pg")},
			want: "kv/vm/pg", by: "kubevirt", pool: "vms"},
		{name: "a pod without a domain in a kubevirt rule: no key", in: input{cniArgs: k8sArgs("kv", "web-0"), runtimeConfig: annotations(alloc.AnnotationStickyKey, "kv/vm/pg")}, pool: "vms"},
		{name: "an error is an error first", in: input{cniArgs: k8sArgs("db", "pg-0"), runtimeConfig: annotations(annotationPools, "web")}, code: 104},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := chooseIn(t, sticky, tt.in)
			if code := cnierr.Code(err); code != tt.code {
				t.Fatalf("code %d (%v), want %d", code, err, tt.code)
			}
			if tt.code != 0 {
				return
			}
			key, by := stickyOf(ch)
			if key != tt.want || by != tt.by || len(ch.Pools) != 1 || ch.Pools[0].Name != tt.pool {
				t.Errorf("key %q by %q, pools %v; want key %q by %q, pool %s", key, by, ch.Pools, tt.want, tt.by, tt.pool)
			}
		})
	}
}

// stickyOf is ch's sticky key and its source, "" for none.
func stickyOf(ch pool.Selection) (key, by string) {
	if ch.Sticky == nil {
		return "", ""
	}
	return ch.Sticky.Key, ch.Sticky.By
}

func TestArgsStickyRejects(t *testing.T) {
	for _, tt := range []struct{ name, ipam string }{
		{"a string", `"rules":[{"pools":["a"],"sticky":"true"}]`},
		{"another source", `"rules":[{"pools":["a"],"sticky":"pod"}]`},
		{"a number", `"rules":[{"pools":["a"],"sticky":1}]`},
		{"an object", `"rules":[{"pools":["a"],"sticky":{"key":"x"}}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := cnierr.As(Args().Validate(argsEnvelope(t, tt.ipam, input{})))
			if e == nil || e.Code != 7 || !strings.Contains(e.Msg+" "+e.Details, "ipam.rules[0].sticky") {
				t.Errorf("got %v; want code 7 naming ipam.rules[0].sticky", e)
			}
		})
	}
	// Misspelt, the key is unknown, never silently "not sticky".
	e := cnierr.As(Args().Validate(argsEnvelope(t, `"rules":[{"pools":["a"],"stikcy":true}]`, input{})))
	if e == nil || e.Code != 7 || !strings.Contains(e.Msg+" "+e.Details, "ipam.rules[0].stikcy") || !strings.Contains(e.Msg+" "+e.Details, "sticky") {
		t.Errorf("got %v; want code 7 naming ipam.rules[0].stikcy and listing sticky", e)
	}
}

// The selection carries "sticky": {"key": …, "by": …} beside pools on ADD and
// CHECK, and on DEL when what DEL presents matches the sticky rule; GC and
// STATUS, which concern no attachment, never.
func TestArgsStickyResult(t *testing.T) {
	conf := `{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-ds-args",` + sticky + `},
		"prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.211.5.20/24"}]}}`
	attach := []string{"CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", "CNI_NETNS=/x"}
	badIP := `,"runtimeConfig":` + annotations(annotationIP, "10.211.5.300") + `}`
	for _, tc := range []struct {
		name, cmd, conf string
		env             []string
		want            string // the "sticky" object as printed, "" for none
	}{
		{"ADD", "ADD", conf, append(attach, "CNI_ARGS="+k8sArgs("db", "pg-0")), `{"by":"pod","key":"db/pg-0"}`},
		{"CHECK", "CHECK", conf, append(attach, "CNI_ARGS="+k8sArgs("db", "pg-0")), `{"by":"pod","key":"db/pg-0"}`},
		{"ADD, not sticky", "ADD", conf, append(attach, "CNI_ARGS="+k8sArgs("web", "web-0")), ""},
		{"DEL", "DEL", conf, append(attach, "CNI_ARGS="+k8sArgs("db", "pg-0")), `{"by":"pod","key":"db/pg-0"}`},
		{"DEL without args", "DEL", conf, attach, ""},
		{"DEL that ADD would refuse", "DEL", conf[:len(conf)-1] + badIP, append(attach, "CNI_ARGS="+k8sArgs("db", "pg-0")), ""},
		{"GC", "GC", conf, nil, ""},
		{"STATUS", "STATUS", conf, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exit, _, out := runArgs(t, tc.cmd, tc.conf, tc.env...)
			if exit != 0 {
				t.Fatalf("exit %d: %v", exit, out)
			}
			got := ""
			if s, ok := out["sticky"]; ok {
				b, _ := json.Marshal(s)
				got = string(b)
			}
			if got != tc.want {
				t.Errorf("sticky %s, want %q (result %v)", got, tc.want, out)
			}
			if _, ok := out["pools"]; !ok {
				t.Errorf("no pools in %v", out)
			}
		})
	}
}

// A selector without a key of its own passes prevResult's on, like the
// addresses; its own wins.
func TestStickyPassedOn(t *testing.T) {
	prev := `"prevResult":{"cniVersion":"1.1.0","pools":[{"name":"x"}],"sticky":{"key":"vm-7"}}`
	attach := []string{"CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", "CNI_NETNS=/x"}
	for _, tc := range []struct {
		name string
		p    plugin.Personality
		conf string
		env  []string
		want string
	}{
		{"ipam-ds-static", Static(), `{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-ds-static","pools":[{"name":"a","subnet":"10.211.1.0/24"}]},` + prev + `}`, attach, "vm-7"},
		{"ipam-ds-args, not sticky", Args(), `{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-ds-args",` + sticky + `},` + prev + `}`,
			append(attach, "CNI_ARGS="+k8sArgs("web", "w")), "vm-7"},
		{"ipam-ds-args, its own", Args(), `{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-ds-args",` + sticky + `},` + prev + `}`,
			append(attach, "CNI_ARGS="+k8sArgs("db", "pg-0")), "db/pg-0"},
		{"a malformed one is dropped", Static(), `{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-ds-static","pools":[{"name":"a","subnet":"10.211.1.0/24"}]},` +
			strings.Replace(prev, `{"key":"vm-7"}`, `"vm-7"`, 1) + `}`, attach, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := append([]string{"CNI_COMMAND=ADD", "CNI_PATH=/opt/cni/bin"}, tc.env...)
			if exit := plugin.Run(tc.p, plugin.IO{Environ: env, Stdin: strings.NewReader(tc.conf), Stdout: &stdout, Stderr: &stderr}); exit != 0 {
				t.Fatalf("exit %d: %s", exit, stdout.String())
			}
			var out struct {
				Sticky *struct{ Key string } `json:"sticky"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			got := ""
			if out.Sticky != nil {
				got = out.Sticky.Key
			}
			if got != tc.want {
				t.Errorf("sticky key %q, want %q (%s)", got, tc.want, stdout.String())
			}
		})
	}
}
