package delegated

import (
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

func TestDelegateNames(t *testing.T) {
	tests := []struct {
		ipam      string
		want      string
		wantField string // in the error's message or details
	}{
		{ipam: `{"delegates":["ipam-ds-static","ipam-da-pools"]}`, want: "ipam-ds-static,ipam-da-pools"},
		{ipam: `{}`, wantField: "ipam.delegates"},
		{ipam: `{"delegates":null}`, wantField: "ipam.delegates"},
		{ipam: `{"delegates":[]}`, wantField: "ipam.delegates"},
		{ipam: `{"delegates":"host-local"}`, wantField: "ipam.delegates"},
		{ipam: `{"delegates":["a",7]}`, wantField: "ipam.delegates[1]"},
		{ipam: `{"delegates":["../../bin/sh"]}`, wantField: "ipam.delegates[0]"},
		{ipam: `{"delegates":[""]}`, wantField: "ipam.delegates[0]"},
		{ipam: `{"delegates":[".."]}`, wantField: "ipam.delegates[0]"},
		// Itself as a delegate would recurse forever (stack overflow).
		{ipam: `{"delegates":["ipam-ds-static","ipam-delegated"]}`, wantField: "ipam.delegates[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.ipam, func(t *testing.T) {
			env, err := netconf.Parse([]byte(`{"cniVersion":"1.0.0","name":"n","ipam":` + tt.ipam + `}`))
			if err != nil {
				t.Fatal(err)
			}
			names, err := delegateNames(env)
			if tt.wantField == "" {
				if err != nil || strings.Join(names, ",") != tt.want {
					t.Fatalf("got %v, %v; want %s", names, err, tt.want)
				}
				return
			}
			e := cnierr.As(err)
			if e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Msg+e.Details, tt.wantField) {
				t.Errorf("error = %+v, want code 7 naming %s", e, tt.wantField)
			}
		})
	}
}

func TestResolveNamesTheMissingDelegate(t *testing.T) {
	_, err := Resolve([]string{"definitely-not-a-plugin"}, t.TempDir())
	e := cnierr.As(err)
	if e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Details, "definitely-not-a-plugin") {
		t.Errorf("error = %+v, want code 7 naming the delegate", e)
	}
}
