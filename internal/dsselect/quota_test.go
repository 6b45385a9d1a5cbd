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
