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
			got, _ := json.Marshal(ch.quota)
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

// pools' view: a tenant scoped to its namespace is bounded as its per
// says; a namespace tenant is not taken for a scoped one.
func TestQuotaOfTenant(t *testing.T) {
	qs := []PoolQuota{{Pool: "p", Per: "namespace", Max: 4}, {Pool: "p", Per: "annotation:team", Max: 2}, {Pool: "q", Per: "arg:T", Max: 1}}
	for _, tt := range []struct {
		pool, tenant string
		want         int // -1: none
	}{
		{"p", "namespace=a", 4},
		{"p", "a/annotation:team=blue", 2},
		{"p", "annotation:team=blue", 2},
		{"p", "annotation:team=x/y", 2},
		{"q", "ns/arg:T=v", 1},
		{"q", "namespace=a", -1},
		{"p", "a/arg:T=v", -1},
	} {
		got, ok := QuotaOf(qs, tt.pool, tt.tenant)
		if !ok {
			got = -1
		}
		if got != tt.want {
			t.Errorf("QuotaOf(%s, %s) = %d, want %d", tt.pool, tt.tenant, got, tt.want)
		}
	}
}
