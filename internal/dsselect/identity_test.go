package dsselect

import (
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// The namespace comes from the runtime ipam.namespaceFrom names; a second
// source that disagrees is code 7 naming both, never preferred; the pod
// name and the sticky key come from CNI_ARGS alone.
func TestNamespaceFrom(t *testing.T) {
	rules := func(from string) string {
		ipam := `"rules":[{"namespace":"prod","pools":["prod"],"sticky":true},{"namespace":"dev","pools":["dev"],"sticky":true}],"defaultPools":["d"]`
		if from != "" {
			ipam += `,"namespaceFrom":"` + from + `"`
		}
		return ipam
	}
	tests := []struct {
		name, from string
		in         input
		pool, key  string
		code       uint
		names      []string // named in a refusal
	}{
		{name: "kubernetes", from: "kubernetes", in: input{cniArgs: k8sArgs("prod", "db-0")}, pool: "prod", key: "prod/db-0"},
		{name: "kubernetes: a Nomad key alone", from: "kubernetes", in: input{cniArgs: "IgnoreUnknown=1;NOMAD_NAMESPACE=prod"},
			code: 7, names: []string{"NOMAD_NAMESPACE", "K8S_POD_NAMESPACE"}},
		{name: "kubernetes: agreeing Nomad key", from: "kubernetes", in: input{cniArgs: k8sArgs("prod", "db-0") + ";NOMAD_NAMESPACE=prod"}, pool: "prod", key: "prod/db-0"},
		{name: "nomad", from: "nomad", in: input{cniArgs: "IgnoreUnknown=true;NOMAD_NAMESPACE=dev;NOMAD_JOB_ID=api"}, pool: "dev"},
		{name: "nomad: a job's K8S_POD_NAMESPACE", from: "nomad", in: input{cniArgs: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;NOMAD_NAMESPACE=dev"},
			code: 7, names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "nomad: K8S_POD_NAMESPACE without NOMAD_NAMESPACE", from: "nomad", in: input{cniArgs: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod"},
			code: 7, names: []string{"K8S_POD_NAMESPACE", "NOMAD_NAMESPACE"}},
		{name: "nomad: a pod name keys within the job's own namespace", from: "nomad", in: input{cniArgs: "IgnoreUnknown=true;K8S_POD_NAME=db-0;NOMAD_NAMESPACE=dev"},
			pool: "dev", key: "dev/db-0"},
		{name: "either: the spoof of the issue", in: input{cniArgs: "IgnoreUnknown=true;NOMAD_NAMESPACE=dev;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=db-0"},
			code: 7, names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "either: a key given twice", in: input{cniArgs: "IgnoreUnknown=true;NOMAD_NAMESPACE=prod;NOMAD_NAMESPACE=dev"},
			code: 7, names: []string{`NOMAD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "either: a key given twice alike", in: input{cniArgs: "IgnoreUnknown=true;NOMAD_NAMESPACE=dev;NOMAD_NAMESPACE=dev"}, pool: "dev"},
		{name: "args.cni namespace", from: "nomad", in: input{cniArgs: "NOMAD_NAMESPACE=dev", args: `{"cni":{"NOMAD_NAMESPACE":"prod"}}`},
			code: 7, names: []string{"args.cni.NOMAD_NAMESPACE", "CNI_ARGS NOMAD_NAMESPACE"}},
		{name: "args.cni namespace the runtime did not send", in: input{cniArgs: "NOMAD_NAMESPACE=dev", args: `{"cni":{"K8S_POD_NAMESPACE":"prod"}}`},
			code: 7, names: []string{"args.cni.K8S_POD_NAMESPACE"}},
		{name: "args.cni pod name", from: "kubernetes", in: input{cniArgs: k8sArgs("dev", "web-0"), args: `{"cni":{"K8S_POD_NAME":"db-0"}}`},
			code: 7, names: []string{"args.cni.K8S_POD_NAME", "CNI_ARGS K8S_POD_NAME"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := chooseIn(t, rules(tt.from), tt.in)
			if code := cnierr.Code(err); code != tt.code {
				t.Fatalf("code %d (%v), want %d", code, err, tt.code)
			}
			if tt.code != 0 {
				e := cnierr.As(err)
				for _, n := range tt.names {
					if !strings.Contains(e.Details, n) {
						t.Errorf("%s / %s does not name %s", e.Msg, e.Details, n)
					}
				}
				return
			}
			if key, _ := stickyOf(ch); len(ch.Pools) != 1 || ch.Pools[0].Name != tt.pool || key != tt.key {
				t.Errorf("pools %v key %q; want %s, %q", ch.Pools, key, tt.pool, tt.key)
			}
		})
	}
	e := cnierr.As(Args().Validate(argsEnvelope(t, rules("k8s"), input{})))
	if e == nil || e.Code != 7 || !strings.Contains(e.Msg+e.Details, "ipam.namespaceFrom") {
		t.Errorf("namespaceFrom k8s: %v, want code 7 naming ipam.namespaceFrom", e)
	}
}
