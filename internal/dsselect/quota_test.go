package dsselect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func TestParseQuota(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want ruleQuota // when err is ""
		err  string    // the field the code-7 error names
	}{
		{raw: `{"per":"namespace","max":20}`, want: ruleQuota{field: "ipam.rules[0]", per: "namespace", max: 20}},
		{raw: `{"max":0,"per":"arg:TEAM"}`, want: ruleQuota{field: "ipam.rules[0]", per: "arg:TEAM", max: 0}},
		{raw: `{"per":"annotation:team","max":3}`, want: ruleQuota{field: "ipam.rules[0]", per: "annotation:team", max: 3}},
		{raw: `{"per":"annotation:team","max":3,"vouched":true}`, want: ruleQuota{field: "ipam.rules[0]", per: "annotation:team", max: 3, vouched: true}},
		{raw: `{"per":"arg:TEAM","max":3,"vouched":false}`, want: ruleQuota{field: "ipam.rules[0]", per: "arg:TEAM", max: 3}},
		{raw: `{"per":"namespace","max":3,"vouched":true}`, err: "ipam.rules[0].quota.vouched"},
		{raw: `{"per":"arg:TEAM","max":3,"vouched":"yes"}`, err: "ipam.rules[0].quota.vouched"},
		{raw: `{"max":20}`, err: "ipam.rules[0].quota.per"},
		{raw: `{"per":null,"max":20}`, err: "ipam.rules[0].quota.per"},
		{raw: `{"per":"namespace"}`, err: "ipam.rules[0].quota.max"},
		{raw: `{"per":7,"max":20}`, err: "ipam.rules[0].quota.per"},
		{raw: `{"per":"namespace","max":"20"}`, err: "ipam.rules[0].quota.max"},
		{raw: `{"per":"namespace","max":-1}`, err: "ipam.rules[0].quota.max"},
		{raw: `{"per":"arg:","max":1}`, err: "ipam.rules[0].quota.per"},
		{raw: `{"per":"label:x","max":1}`, err: "ipam.rules[0].quota.per"},
		{raw: `{"per":"namespace","max":1,"Max":2}`, err: "ipam.rules[0].quota.Max"},
		{raw: `["namespace",1]`, err: "ipam.rules[0].quota"},
	} {
		q, err := parseQuota("ipam.rules[0].quota", json.RawMessage(tt.raw))
		switch {
		case tt.err == "" && (err != nil || q == nil || *q != tt.want):
			t.Errorf("%s: %+v %v, want %+v", tt.raw, q, err, tt.want)
		case tt.err != "" && (cnierr.Code(err) != cnierr.CodeInvalidConfig || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %v, want code 7 naming %s", tt.raw, err, tt.err)
		}
	}
	if q, err := parseQuota("ipam.rules[0].quota", nil); q != nil || err != nil {
		t.Errorf("no quota: %+v %v", q, err)
	}
}

// authorRules: namespaces team-* get std (max 4, alt by podChoice, std
// overflowing into spill) or, annotated tier=gold, gold (max 2); team-x
// pods are all std's; per-annotation tenants in lab-*, one rule vouched
// for; ops by arg.
const authorRules = `"rules":[
	{"namespace":"team-x","pools":["std"],"quota":{"per":"namespace","max":9}},
	{"namespace":"team-*","annotations":{"tier":"gold"},"pools":["gold"],"quota":{"per":"namespace","max":2}},
	{"namespace":"team-*","pools":["std"],"podChoice":["std","alt"],"quota":{"per":"namespace","max":4}},
	{"namespace":"lab-*","annotations":{"vouched":"*"},"pools":["alt"],"quota":{"per":"annotation:team","max":5,"vouched":true}},
	{"namespace":"lab-*","pools":["alt"],"quota":{"per":"annotation:team","max":3}},
	{"namespace":"ops","pools":["alt"],"quota":{"per":"arg:TEAM","max":1}}],
	"poolDefinitions":{"std":{"ranges":[{"subnet":"10.9.1.0/24"}],"overflow":"spill"},"spill":[{"subnet":"10.9.2.0/24"}],
		"alt":[{"subnet":"10.9.3.0/24"}],"gold":[{"subnet":"10.9.4.0/24"}]}`

// A quota's tenant, limit and count scope depend only on the namespace
// and the tenant's value, never on the rule or pools the author chose.
func TestQuotaOfAttachment(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   input
		want string // the quota as JSON
	}{
		{"std: gold's max, every pool either rule gives",
			input{cniArgs: k8sArgs("team-a", "p")},
			`{"tenant":"namespace=team-a","rule":"ipam.rules[1]","max":2,"pools":["gold","std","spill","alt"]}`},
		{"gold: the same",
			input{cniArgs: k8sArgs("team-a", "p"), runtimeConfig: annotations("tier", "gold")},
			`{"tenant":"namespace=team-a","rule":"ipam.rules[1]","max":2,"pools":["gold","std","spill","alt"]}`},
		{"podChoice: the same",
			input{cniArgs: k8sArgs("team-a", "p"), runtimeConfig: annotations(annotationPools, "alt")},
			`{"tenant":"namespace=team-a","rule":"ipam.rules[1]","max":2,"pools":["gold","std","spill","alt"]}`},
		{"team-x reaches its own rule alone",
			input{cniArgs: k8sArgs("team-x", "p"), runtimeConfig: annotations("tier", "gold")},
			`{"tenant":"namespace=team-x","rule":"ipam.rules[0]","max":9,"pools":["std","spill"]}`},
		{"an annotation's tenant, scoped to the namespace",
			input{cniArgs: k8sArgs("lab-1", "p"), runtimeConfig: annotations("team", "blue")},
			`{"tenant":"lab-1/annotation:team=blue","rule":"ipam.rules[4]","max":3,"pools":["alt"]}`},
		{"vouched for: as written, apart from the unvouched rule's tenants",
			input{cniArgs: k8sArgs("lab-1", "p"), runtimeConfig: annotations("team", "blue", "vouched", "y")},
			`{"tenant":"annotation:team=blue","rule":"ipam.rules[3]","max":5,"pools":["alt"]}`},
		{"an arg's tenant, scoped",
			input{cniArgs: "K8S_POD_NAMESPACE=ops;TEAM=blue"},
			`{"tenant":"ops/arg:TEAM=blue","rule":"ipam.rules[5]","max":1,"pools":["alt"]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := chooseIn(t, authorRules, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(ch.Quota)
			if string(got) != tt.want {
				t.Errorf("quota %s, want %s", got, tt.want)
			}
		})
	}
}

// validate's findings: tenants an author chooses, and quotas an author
// escapes through another rule or the defaults.
func TestQuotaRisks(t *testing.T) {
	for _, tt := range []struct {
		name, rules string
		want        []string // "field value"
	}{
		{"namespace rules, no escape",
			`[{"namespace":"a","pools":["p"],"quota":{"per":"namespace","max":1}},{"namespace":"*","pools":["q"],"quota":{"per":"namespace","max":1}}]`,
			nil},
		{"an annotation's tenant; vouched for",
			`[{"namespace":"a","pools":["p"],"quota":{"per":"annotation:team","max":1}},{"namespace":"b","pools":["p"],"quota":{"per":"arg:T","max":1,"vouched":true}}]`,
			[]string{"ipam.rules[0].quota.per annotation:team"}},
		{"an earlier rule without quota, chosen by annotation",
			`[{"namespace":"a","annotations":{"tier":"gold"},"pools":["g"]},{"namespace":"a","pools":["p"],"quota":{"per":"namespace","max":1}}]`,
			[]string{"ipam.rules[1].quota ipam.rules[0]"}},
		{"the defaults, by not presenting a label",
			`[{"namespace":"a","labels":{"x":"*"},"pools":["p"],"quota":{"per":"namespace","max":1}}],"defaultPools":["d"]`,
			[]string{"ipam.rules[0].quota ipam.defaultPools"}},
		{"a later rule for another tenant, by not presenting a label; and back, by presenting it",
			`[{"namespace":"a","labels":{"x":"*"},"pools":["p"],"quota":{"per":"namespace","max":1}},{"namespace":"*","pools":["q"],"quota":{"per":"arg:T","max":1,"vouched":true}}],"defaultPools":["d"]`,
			[]string{"ipam.rules[0].quota ipam.rules[1]", "ipam.rules[1].quota ipam.rules[0]"}},
		{"a later rule the quota's own rule shadows; another namespace's",
			`[{"namespace":"a","pools":["p"],"quota":{"per":"namespace","max":1}},{"namespace":"a","pools":["q"]},{"namespace":"b","annotations":{"k":"v"},"pools":["q"]}],"defaultPools":["d"]`,
			nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			risks, err := QuotaRisks(argsEnvelope(t, `"rules":`+tt.rules, input{}))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range risks {
				got = append(got, r.Field+" "+r.Value)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("risks %q, want %q", got, tt.want)
			}
		})
	}
}

// pools' view of a tenant's quota is the one its ADDs carry (quotaOf):
// its own namespace's rules, never the first rule that names the pool; a
// tenant naming no namespace gets the smallest of its namespaces'.
func TestTenantQuotasOf(t *testing.T) {
	shared := `"rules":[{"namespace":"a","pools":["p"],"quota":{"per":"namespace","max":3}},
		{"namespace":"b","pools":["p"],"quota":{"per":"namespace","max":5}}]`
	vouched := `"rules":[{"namespace":"x-*","pools":["p"],"quota":{"per":"annotation:t","max":4,"vouched":true}},
		{"namespace":"y","pools":["p"],"quota":{"per":"annotation:t","max":2,"vouched":true}},
		{"namespace":"z","pools":["q"],"quota":{"per":"annotation:t","max":1,"vouched":true}}]`
	noNamespace := `"rules":[{"args":{"T":"*"},"pools":["p"],"quota":{"per":"arg:T","max":2}},
		{"namespace":"n","pools":["p"],"quota":{"per":"annotation:example.com/team","max":7}}]`
	for _, tt := range []struct {
		name, ipam, pool, tenant string
		want                     int // -1: none
	}{
		{"the second rule's tenant: its own max", shared, "p", "namespace=b", 5},
		{"the first rule's tenant", shared, "p", "namespace=a", 3},
		{"a namespace no rule reaches", shared, "p", "namespace=c", -1},
		{"the smallest max its namespace reaches", authorRules, "std", "namespace=team-a", 2},
		{"the count's pools include the chain", authorRules, "spill", "namespace=team-a", 2},
		{"a pool outside the count", authorRules, "alt", "namespace=team-x", -1},
		{"team-x reaches its own rule alone", authorRules, "spill", "namespace=team-x", 9},
		{"an annotation's tenant, scoped", authorRules, "alt", "lab-1/annotation:team=blue", 3},
		{"vouched for: the vouched rule", authorRules, "alt", "annotation:team=blue", 5},
		{"an arg's tenant, scoped", authorRules, "alt", "ops/arg:TEAM=blue", 1},
		{"an arg's tenant without a namespace, no rule reaches", authorRules, "alt", "arg:TEAM=blue", -1},
		{"vouched in several namespaces: the smallest", vouched, "p", "annotation:t=v", 2},
		{"vouched, another pool's rule", vouched, "q", "annotation:t=v", 1},
		{"sent without a namespace", noNamespace, "p", "arg:T=v", 2},
		{"the same value in a namespace", noNamespace, "p", "ns/arg:T=v", 2},
		{"an annotation key holding '/'", noNamespace, "p", "n/annotation:example.com/team=x", 7},
		{"not a tenant", shared, "p", "garbage", -1},
		{"a scoped namespace tenant is no tenant", shared, "p", "a/namespace=a", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, q, err := Selectable(argsEnvelope(t, tt.ipam, input{}), []string{ArgsName})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := q.Of(tt.pool, tt.tenant)
			if !ok {
				got = -1
			}
			if got != tt.want {
				t.Errorf("Of(%s, %s) = %d, want %d", tt.pool, tt.tenant, got, tt.want)
			}
		})
	}
}

func TestSampleOf(t *testing.T) {
	for pattern, want := range map[string]string{
		"team-*": "team-x", "[ab]c": "ac", "[^a-c]z": "dz", `a\*`: "a*", "?": "x", "ops": "ops", "": "", `[\]]`: "",
	} {
		got, ok := sampleOf(pattern)
		if got != want || ok != (want != "") {
			t.Errorf("sampleOf(%q) = %q %v, want %q", pattern, got, ok, want)
		}
	}
}
