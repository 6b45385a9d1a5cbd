package ipamconf

import (
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

func TestStickyKey(t *testing.T) {
	pod := []netconf.CNIArg{{Key: "K8S_POD_NAMESPACE", Value: "db"}, {Key: "K8S_POD_NAME", Value: "pg-0"}, {Key: "CNIPLUGINS_STICKY_KEY", Value: "vm-7"}}
	withAnnotations := func(extra string) string {
		return `{"cniVersion":"1.1.0","name":"n","ipam":{},"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{` + extra + `}}}`
	}
	fromSelector := func(sticky string) string {
		return `{"cniVersion":"1.1.0","name":"n","ipam":{},"prevResult":{"cniVersion":"1.1.0","sticky":` + sticky + `},` +
			`"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"kubevirt.io/migrationJobName":"m1"}}}`
	}
	annotated := withAnnotations(`"cniplugins.io/sticky-key":"tenant/a"`)
	plain := `{"cniVersion":"1.1.0","name":"n","ipam":{}}`
	kubevirt := withAnnotations(`"kubevirt.io/domain":"pg"`)
	migrating := withAnnotations(`"kubevirt.io/domain":"pg","kubevirt.io/migrationJobName":"m1","cniplugins.io/sticky-key":"pg-0"`)
	nomadJob := []netconf.CNIArg{{Key: "K8S_POD_NAMESPACE", Value: "prod"}, {Key: "K8S_POD_NAME", Value: "pg-0"}, {Key: "NOMAD_NAMESPACE", Value: "dev"}}
	for _, tc := range []struct {
		name    string
		conf    string
		args    []netconf.CNIArg
		by      []string
		from    string // ipam.namespaceFrom
		want    string
		wantMig string
		wantErr bool
	}{
		{name: "pod", conf: plain, args: pod, by: []string{"pod"}, want: "db/pg-0"},
		{name: "first found wins, scoped to the namespace", conf: annotated, args: pod, by: []string{"annotation", "pod"}, want: "db/tenant/a"},
		{name: "annotation without a namespace: as written", conf: annotated, by: []string{"annotation"}, want: "tenant/a"},
		{name: "annotation already in its namespace", conf: annotated, args: []netconf.CNIArg{{Key: "K8S_POD_NAMESPACE", Value: "tenant"}}, by: []string{"annotation"}, want: "tenant/a"},
		{name: "arg, scoped", conf: plain, args: pod, by: []string{"arg", "pod"}, want: "db/vm-7"},
		{name: "arg without a namespace: as written", conf: plain, args: pod[2:], by: []string{"arg"}, want: "vm-7"},
		{name: "arg, Nomad's namespace", conf: plain, args: []netconf.CNIArg{{Key: "NOMAD_NAMESPACE", Value: "prod"}, pod[2]}, by: []string{"arg"}, want: "prod/vm-7"},
		{name: "two namespaces that differ", conf: plain, args: []netconf.CNIArg{{Key: "NOMAD_NAMESPACE", Value: "prod"}, pod[0], pod[2]}, by: []string{"arg"}, wantErr: true},
		{name: "annotation missing, then pod", conf: plain, args: pod, by: []string{"annotation", "pod"}, want: "db/pg-0"},
		{name: "nothing found", conf: plain, by: []string{"pod", "arg"}},
		{name: "pod needs both", conf: plain, args: pod[1:2], by: []string{"pod"}},
		{name: "the selector's key first", conf: fromSelector(`{"key":"sel/key"}`), args: pod, by: []string{"pod"}, want: "sel/key"},
		{name: "the selector's key without ipam.sticky", conf: fromSelector(`{"key":"sel/key"}`), want: "sel/key"},
		{name: "off", conf: plain, args: pod},
		{name: "kubevirt", conf: kubevirt, args: pod, by: []string{"kubevirt", "pod"}, want: "db/vm/pg"},
		{name: "kubevirt needs the domain", conf: annotated, args: pod, by: []string{"kubevirt", "pod"}, want: "db/pg-0"},
		{name: "kubevirt needs the namespace", conf: kubevirt, args: pod[1:2], by: []string{"kubevirt"}},
		{name: "control character", conf: plain, args: []netconf.CNIArg{{Key: "CNIPLUGINS_STICKY_KEY", Value: "a\x01b"}}, by: []string{"arg"}, wantErr: true},
		{name: "too long", conf: plain, args: []netconf.CNIArg{{Key: "CNIPLUGINS_STICKY_KEY", Value: strings.Repeat("k", 254)}}, by: []string{"arg"}, wantErr: true},

		// Who the attachment is: netconf.IdentityOf, as a selector reads it.
		{name: "pod: a Nomad job posing as another namespace", conf: plain, args: nomadJob, by: []string{"pod"}, wantErr: true},
		{name: "pod: namespaceFrom nomad, a job's K8S_POD_NAMESPACE", conf: plain, args: nomadJob, by: []string{"pod"}, from: "nomad", wantErr: true},
		{name: "pod: namespaceFrom nomad, the job's own namespace", conf: plain, args: nomadJob[1:], by: []string{"pod"}, from: "nomad", want: "dev/pg-0"},
		{name: "pod: namespaceFrom kubernetes, a Nomad key alone", conf: plain, args: nomadJob[1:], by: []string{"pod"}, from: "kubernetes", wantErr: true},
		{name: "pod: the namespace twice", conf: plain, args: append([]netconf.CNIArg{{Key: "K8S_POD_NAMESPACE", Value: "prod"}}, pod...), by: []string{"pod"}, wantErr: true},
		{name: "pod: the pod name twice", conf: plain, args: append([]netconf.CNIArg{{Key: "K8S_POD_NAME", Value: "web-0"}}, pod...), by: []string{"pod"}, wantErr: true},
		{name: "pod: the namespace twice alike", conf: plain, args: append([]netconf.CNIArg{pod[0]}, pod...), by: []string{"pod"}, want: "db/pg-0"},
		{name: "kubevirt: a Nomad job posing", conf: kubevirt, args: nomadJob, by: []string{"kubevirt"}, wantErr: true},
		{name: "annotation: namespaceFrom nomad scopes to Nomad's", conf: annotated, args: nomadJob[2:], by: []string{"annotation"}, from: "nomad", want: "dev/tenant/a"},

		// A migration name counts for a VM's key alone.
		{name: "kubevirt, a migration target", conf: migrating, args: pod, by: []string{"kubevirt"}, want: "db/vm/pg", wantMig: "m1"},
		{name: "annotation key, a migration name ignored", conf: migrating, args: pod, by: []string{"annotation"}, want: "db/pg-0"},
		{name: "pod key, a migration name ignored", conf: migrating, args: pod, by: []string{"pod"}, want: "db/pg-0"},
		{name: "arg key, a migration name ignored", conf: migrating, args: pod, by: []string{"arg"}, want: "db/vm-7"},
		{name: "kubevirt, a malformed migration name", conf: withAnnotations(`"kubevirt.io/domain":"pg","kubevirt.io/migrationJobName":"m\u0001"`), args: pod, by: []string{"kubevirt"}, wantErr: true},
		{name: "annotation key, a malformed migration name never read", conf: withAnnotations(`"cniplugins.io/sticky-key":"pg-0","kubevirt.io/migrationJobName":"m\u0001"`), args: pod, by: []string{"annotation"}, want: "db/pg-0"},
		{name: "a selector's VM key", conf: fromSelector(`{"key":"db/vm/pg","by":"kubevirt"}`), want: "db/vm/pg", wantMig: "m1"},
		{name: "a selector's key shaped like a VM's", conf: fromSelector(`{"key":"db/vm/pg","by":"annotation"}`), want: "db/vm/pg"},
		{name: "a selector's key of no source", conf: fromSelector(`{"key":"db/vm/pg"}`), want: "db/vm/pg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := netconf.Parse([]byte(tc.conf))
			if err != nil {
				t.Fatal(err)
			}
			got, err := StickyKey(conf, tc.args, alloc.Sticky{By: tc.by, HoldFor: time.Hour, NamespaceFrom: tc.from})
			if tc.wantErr {
				if cnierr.Code(err) != cnierr.CodeInvalidConfig {
					t.Fatalf("err = %v, want 7", err)
				}
				return
			}
			if err != nil || got.Key != tc.want || got.Migration != tc.wantMig {
				t.Fatalf("got %+v %v, want key %q migration %q", got, err, tc.want, tc.wantMig)
			}
			if got.Key != "" && got.HoldFor != time.Hour {
				t.Errorf("holdFor %s, want the config's 1h", got.HoldFor)
			}
		})
	}
}

func TestStickyConf(t *testing.T) {
	for _, tc := range []struct {
		name, ipam string
		want       alloc.Sticky
		wantErr    string
	}{
		{name: "none", ipam: `{}`, want: alloc.Sticky{HoldFor: alloc.DefaultHoldFor}},
		{name: "namespaceFrom nomad", ipam: `{"namespaceFrom":"nomad","sticky":{"by":["pod"]}}`, want: alloc.Sticky{By: []string{"pod"}, HoldFor: alloc.DefaultHoldFor, NamespaceFrom: "nomad"}},
		{name: "namespaceFrom kubernetes", ipam: `{"namespaceFrom":"kubernetes"}`, want: alloc.Sticky{HoldFor: alloc.DefaultHoldFor, NamespaceFrom: "kubernetes"}},
		{name: "namespaceFrom misspelt", ipam: `{"namespaceFrom":"k8s","sticky":{"by":["pod"]}}`, wantErr: "ipam.namespaceFrom"},
		{name: "namespaceFrom not a string", ipam: `{"namespaceFrom":1}`, wantErr: "ipam.namespaceFrom"},
		{name: "sticky malformed", ipam: `{"sticky":{"by":["label"]}}`, wantErr: "ipam.sticky.by[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := netconf.Parse([]byte(`{"cniVersion":"1.1.0","name":"n","ipam":` + tc.ipam + `}`))
			if err != nil {
				t.Fatal(err)
			}
			got, err := StickyConf(conf)
			if tc.wantErr != "" {
				if e := cnierr.As(err); e == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Msg+e.Details, tc.wantErr) {
					t.Fatalf("err = %v, want 7 naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.HoldFor != tc.want.HoldFor || got.NamespaceFrom != tc.want.NamespaceFrom || strings.Join(got.By, ",") != strings.Join(tc.want.By, ",") {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}
