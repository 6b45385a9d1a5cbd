package netconf

import (
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Who the attachment is, as every selector and allocator reads it: the
// namespace from the runtime ipam.namespaceFrom names, and a second,
// different value of an identity key refused, never preferred.
func TestIdentityOf(t *testing.T) {
	for _, tc := range []struct {
		name, args, from string
		want             Identity
		names            []string // named by a refusal (code 7)
	}{
		{name: "containerd", args: "K8S_POD_NAMESPACE=db;K8S_POD_NAME=pg-0;K8S_POD_UID=1", want: Identity{"db", "pg-0"}},
		{name: "podman: a name alone", args: "K8S_POD_NAME=web", want: Identity{PodName: "web"}},
		{name: "Nomad", args: "NOMAD_NAMESPACE=dev;NOMAD_JOB_ID=api", want: Identity{Namespace: "dev"}},
		{name: "both, agreeing", args: "K8S_POD_NAMESPACE=db;NOMAD_NAMESPACE=db", want: Identity{Namespace: "db"}},
		{name: "nothing", args: "IP=10.0.0.1"},
		{name: "a Nomad job posing as prod", args: "K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0;NOMAD_NAMESPACE=dev",
			names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "the namespace twice", args: "K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0;K8S_POD_NAMESPACE=dev",
			names: []string{`K8S_POD_NAMESPACE="prod"`, `K8S_POD_NAMESPACE="dev"`}},
		{name: "the pod name twice", args: "K8S_POD_NAME=pg-0;K8S_POD_NAME=web-0", names: []string{`"pg-0"`, `"web-0"`}},
		{name: "a key twice alike", args: "NOMAD_NAMESPACE=dev;NOMAD_NAMESPACE=dev", want: Identity{Namespace: "dev"}},
		{name: "kubernetes", from: "kubernetes", args: "K8S_POD_NAMESPACE=db;K8S_POD_NAME=pg-0", want: Identity{"db", "pg-0"}},
		{name: "kubernetes: a Nomad key alone", from: "kubernetes", args: "NOMAD_NAMESPACE=dev",
			names: []string{`NOMAD_NAMESPACE="dev"`, "ipam.namespaceFrom kubernetes"}},
		{name: "kubernetes: Nomad's key agreeing", from: "kubernetes", args: "K8S_POD_NAMESPACE=db;NOMAD_NAMESPACE=db", want: Identity{Namespace: "db"}},
		{name: "nomad", from: "nomad", args: "K8S_POD_NAME=pg-0;NOMAD_NAMESPACE=dev", want: Identity{"dev", "pg-0"}},
		{name: "nomad: a job's K8S_POD_NAMESPACE alone", from: "nomad", args: "K8S_POD_NAMESPACE=prod",
			names: []string{`K8S_POD_NAMESPACE="prod"`, "ipam.namespaceFrom nomad"}},
		{name: "nomad: an empty K8S_POD_NAMESPACE is still a second source", from: "nomad", args: "K8S_POD_NAMESPACE=;NOMAD_NAMESPACE=dev",
			names: []string{`K8S_POD_NAMESPACE=""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, err := ParseCNIArgs(tc.args, []string{ArgPodNamespace, ArgNomadNamespace, ArgPodName, "K8S_POD_UID", "NOMAD_JOB_ID", "IP"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := IdentityOf(args, tc.from)
			if tc.names != nil {
				e := cnierr.As(err)
				if e == nil || e.Code != cnierr.CodeInvalidConfig {
					t.Fatalf("got %+v %v, want code 7", got, err)
				}
				for _, n := range tc.names {
					if !strings.Contains(e.Details, n) {
						t.Errorf("%s does not name %s", e.Details, n)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestParseNamespaceFrom(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"", true}, {"kubernetes", true}, {"nomad", true}, {"k8s", false}, {"Nomad", false}} {
		err := ParseNamespaceFrom(tc.v)
		if ok := err == nil; ok != tc.ok {
			t.Errorf("%q: %v, want ok %v", tc.v, err, tc.ok)
		}
		if err != nil && !strings.Contains(cnierr.As(err).Details+cnierr.As(err).Msg, "ipam.namespaceFrom") {
			t.Errorf("%q: %v does not name ipam.namespaceFrom", tc.v, err)
		}
	}
}
