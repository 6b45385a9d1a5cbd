package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// authorConf is ipam-delegated → ipam-ds-args → ipam-da-pools with rules
// (JSON) over pools std, alt and gold, namespaces from the CRI runtime,
// pod annotations as the capability.
func authorConf(dataDir, rules string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"author","capabilities":{"io.kubernetes.cri.pod-annotations":true},
		"ipam":{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":%q,"namespaceFrom":"kubernetes",
		"rules":%s,
		"poolDefinitions":{"std":[{"subnet":"10.238.1.0/24"}],"alt":[{"subnet":"10.238.2.0/24"}],"gold":[{"subnet":"10.238.3.0/24"}]}}}`,
		dataDir, rules)
}

// podAdd is a pod's ADD as containerd runs it: namespace and name in
// CNI_ARGS, annotations in runtimeConfig.
func podAdd(conf []byte, id, ns string, annotations map[string]string) testbin.Reply {
	return testbin.Run(podCall(conf, id, ns, annotations))
}

func podCall(conf []byte, id, ns string, annotations map[string]string) testbin.Call {
	var m map[string]any
	_ = json.Unmarshal(conf, &m)
	if annotations != nil {
		m["runtimeConfig"] = map[string]any{"io.kubernetes.cri.pod-annotations": annotations}
	}
	stdin, _ := json.Marshal(m)
	c := call("ipam-delegated", "ADD", id, stdin)
	c.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + id
	return c
}

// wantQuota: r is 106 whose details hold each of details.
func wantQuota(t *testing.T, r testbin.Reply, what string, details ...string) {
	t.Helper()
	e := r.Err()
	if e == nil || e.Code != 106 {
		t.Fatalf("%s: exit %d %s, want 106", what, r.Exit, r.Stdout)
	}
	for _, d := range details {
		if !strings.Contains(e.Details, d) {
			t.Errorf("%s: details %q do not hold %q", what, e.Details, d)
		}
	}
}

// A pod's author cannot step around its namespace's quota: not by asking
// for another pool its rule's podChoice offers, not by annotating its way
// into another rule with a quota for the same tenant. The count spans
// every pool those rules could give, and the limit is the smallest of
// their maxes.
func TestQuotaAuthorCannotStepAround(t *testing.T) {
	t.Run("podChoice", func(t *testing.T) {
		conf := authorConf(t.TempDir(), `[{"namespace":"team-*","pools":["std"],"podChoice":["std","alt"],"quota":{"per":"namespace","max":4}}]`)
		for i := range 4 {
			testbin.MustSucceed(t, podCall(conf, fmt.Sprint("p", i), "team-a", nil))
		}
		wantQuota(t, podAdd(conf, "p4", "team-a", nil), "a fifth pod", "tenant=namespace=team-a", "max=4 inUse=4")
		wantQuota(t, podAdd(conf, "p5", "team-a", map[string]string{"cniplugins.io/pools": "alt"}), "a fifth pod asking for alt",
			"tenant=namespace=team-a", "max=4 inUse=4")
		testbin.MustSucceed(t, podCall(conf, "b0", "team-b", map[string]string{"cniplugins.io/pools": "alt"}))
	})
	// Rule 0 (gold, max 3) is the author's to choose by annotation; rule 1
	// gives every team-a pod std with max 2. team-a holds at most 2 in
	// all, whichever it starts with.
	rules := `[{"namespace":"team-a","annotations":{"tier":"gold"},"pools":["gold"],"quota":{"per":"namespace","max":3}},
		{"namespace":"team-*","pools":["std"],"quota":{"per":"namespace","max":2}}]`
	gold := map[string]string{"tier": "gold"}
	t.Run("a rule chosen by annotation", func(t *testing.T) {
		conf := authorConf(t.TempDir(), rules)
		for i := range 2 {
			testbin.MustSucceed(t, podCall(conf, fmt.Sprint("s", i), "team-a", nil))
		}
		wantQuota(t, podAdd(conf, "g0", "team-a", gold), "a gold pod after two std ones",
			"tenant=namespace=team-a rule=ipam.rules[1] max=2 inUse=2")
		// team-b cannot reach rule 0: its own limit is rule 1's alone.
		for i := range 2 {
			testbin.MustSucceed(t, podCall(conf, fmt.Sprint("b", i), "team-b", gold))
		}
	})
	t.Run("the smallest max", func(t *testing.T) {
		conf := authorConf(t.TempDir(), rules)
		for i := range 2 {
			testbin.MustSucceed(t, podCall(conf, fmt.Sprint("g", i), "team-a", gold))
		}
		wantQuota(t, podAdd(conf, "g2", "team-a", gold), "a third gold pod",
			"tenant=namespace=team-a rule=ipam.rules[1] max=2 inUse=2")
		wantQuota(t, podAdd(conf, "s0", "team-a", nil), "a std pod after two gold ones", "inUse=2")
	})
}

// A tenant named by an annotation is scoped to the pod's namespace: a pod
// in mallory annotated team=blue neither spends nor fills blue's quota.
// With "vouched": true the operator says the value is not the author's,
// and it names one tenant across namespaces.
func TestQuotaAuthorTenantScoped(t *testing.T) {
	rules := func(vouched string) string {
		return `[{"annotations":{"team":"*"},"pools":["std"],"quota":{"per":"annotation:team","max":2` + vouched + `}}]`
	}
	blue := map[string]string{"team": "blue"}
	conf := authorConf(t.TempDir(), rules(""))
	for i := range 2 {
		testbin.MustSucceed(t, podCall(conf, fmt.Sprint("m", i), "mallory", blue))
	}
	wantQuota(t, podAdd(conf, "m2", "mallory", blue), "mallory's third team=blue pod",
		"tenant=mallory/annotation:team=blue", "max=2 inUse=2")
	for i := range 2 {
		if r := podAdd(conf, fmt.Sprint("b", i), "blue", blue); r.Exit != 0 {
			t.Fatalf("blue's own pod %d after mallory's: %s", i, r.Stdout)
		}
	}
	wantQuota(t, podAdd(conf, "b2", "blue", blue), "blue's third pod", "tenant=blue/annotation:team=blue")

	conf = authorConf(t.TempDir(), rules(`,"vouched":true`))
	testbin.MustSucceed(t, podCall(conf, "m0", "mallory", blue))
	testbin.MustSucceed(t, podCall(conf, "b0", "blue", blue))
	wantQuota(t, podAdd(conf, "b1", "blue", blue), "a vouched-for team=blue, the third pod", "tenant=annotation:team=blue", "inUse=2")
}

// validate reports each rule whose tenant a pod's author chooses, and
// each quota an author steps around through a rule or the defaults
// without it; the same config, vouched for and closed, validates.
func TestValidateReportsAuthorQuotas(t *testing.T) {
	dir := t.TempDir()
	conflist := func(name, rules string) string {
		p := filepath.Join(dir, name+".conflist")
		writeFile(t, p, `{"cniVersion":"1.0.0","name":"`+name+`","plugins":[{"type":"bridge","ipam":{"type":"ipam-delegated",
			"delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":"`+dir+`","namespaceFrom":"kubernetes","rules":`+rules+`,
			"poolDefinitions":{"std":[{"subnet":"10.238.1.0/24"}],"gold":[{"subnet":"10.238.3.0/24"}]}}}]}`)
		return p
	}
	open := conflist("open", `[{"annotations":{"team":"*"},"pools":["std"],"quota":{"per":"annotation:team","max":2}},
		{"namespace":"team-a","annotations":{"tier":"gold"},"pools":["gold"]},
		{"namespace":"team-a","pools":["std"],"quota":{"per":"namespace","max":2}}]`)
	r := cliRun("validate", "--cni-path", binDir, "-o", "json", open)
	var problems []struct{ Path, Value, Message string }
	if err := json.Unmarshal(r.Stdout, &problems); err != nil || r.Exit == 0 {
		t.Fatalf("exit %d, stdout %q: %v", r.Exit, r.Stdout, err)
	}
	want := []string{
		"plugins[0].ipam.rules[0].quota.per annotation:team a pod's author chooses this tenant",
		"plugins[0].ipam.rules[0].quota ipam.rules[1] a pod's author can step around this quota",
		"plugins[0].ipam.rules[0].quota ipam.rules[2] a pod's author can step around this quota",
		"plugins[0].ipam.rules[2].quota ipam.rules[0] a pod's author can step around this quota",
		"plugins[0].ipam.rules[2].quota ipam.rules[1] a pod's author can step around this quota",
	}
	if len(problems) != len(want) {
		t.Fatalf("problems %+v, want %d", problems, len(want))
	}
	for i, p := range problems {
		if got := p.Path + " " + p.Value + " " + p.Message; !strings.HasPrefix(got, want[i]) {
			t.Errorf("problem %d: %q, want %q…", i, got, want[i])
		}
	}
	closed := conflist("closed", `[{"namespace":"team-a","annotations":{"tier":"gold"},"pools":["gold"],"quota":{"per":"namespace","max":3}},
		{"namespace":"team-a","pools":["std"],"quota":{"per":"namespace","max":2}},
		{"namespace":"lab-*","annotations":{"team":"*"},"pools":["std"],"quota":{"per":"annotation:team","max":2,"vouched":true}}]`)
	if r := cliRun("validate", "--cni-path", binDir, closed); r.Exit != 0 {
		t.Errorf("a closed config: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
	}
}
