package dsselect

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// Each runtime's shape, as measured from its source, normalises to one
// attachment.
func TestNormaliseRuntimeShapes(t *testing.T) {
	tests := []struct {
		name string
		in   input
		want attachment
	}{
		{name: "containerd CRI", in: input{
			cniArgs:       "IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=db-0;K8S_POD_INFRA_CONTAINER_ID=f00;K8S_POD_UID=9e1",
			runtimeConfig: `{"io.kubernetes.cri.pod-annotations":{"team":"pay","cniplugins.io/pools":"fast, ,slow","cniplugins.io/ip":"10.211.1.5, fd00:211::5"},"portMappings":[]}`,
		}, want: attachment{namespace: "shop", podName: "db-0", ifname: "eth0",
			args:         map[string]string{"IgnoreUnknown": "1", "K8S_POD_NAMESPACE": "shop", "K8S_POD_NAME": "db-0", "K8S_POD_INFRA_CONTAINER_ID": "f00", "K8S_POD_UID": "9e1"},
			annotations:  map[string]string{"team": "pay", "cniplugins.io/pools": "fast, ,slow", "cniplugins.io/ip": "10.211.1.5, fd00:211::5"},
			choice:       []askedPool{{"fast", "annotation cniplugins.io/pools"}, {"slow", "annotation cniplugins.io/pools"}},
			requestedIPs: []netip.Addr{netip.MustParseAddr("10.211.1.5"), netip.MustParseAddr("fd00:211::5")},
		}},
		{name: "CRI-O, no annotations capability", in: input{
			cniArgs: "IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1;K8S_POD_INFRA_CONTAINER_ID=b4r;K8S_POD_UID=7",
		}, want: attachment{namespace: "shop", podName: "web-1", ifname: "eth0",
			args: map[string]string{"IgnoreUnknown": "1", "K8S_POD_NAMESPACE": "shop", "K8S_POD_NAME": "web-1", "K8S_POD_INFRA_CONTAINER_ID": "b4r", "K8S_POD_UID": "7"},
		}},
		{name: "podman", in: input{
			cniArgs:       "IgnoreUnknown=1;K8S_POD_NAME=db-1",
			runtimeConfig: `{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}],"aliases":{"n":["db-1"]}}`,
		}, want: attachment{podName: "db-1", ifname: "eth0", args: map[string]string{"IgnoreUnknown": "1", "K8S_POD_NAME": "db-1"}}},
		{name: "Nomad", in: input{
			ifname:  "eth1",
			cniArgs: "IgnoreUnknown=true;tier=gold;NOMAD_REGION=global;NOMAD_NAMESPACE=prod;NOMAD_JOB_ID=api;NOMAD_GROUP_NAME=g;NOMAD_ALLOC_ID=a1",
		}, want: attachment{namespace: "prod", ifname: "eth1",
			args: map[string]string{"IgnoreUnknown": "true", "tier": "gold", "NOMAD_REGION": "global", "NOMAD_NAMESPACE": "prod", "NOMAD_JOB_ID": "api", "NOMAD_GROUP_NAME": "g", "NOMAD_ALLOC_ID": "a1"},
		}},
		{name: "Multus cni-args", in: input{
			ifname:  "net1",
			cniArgs: "IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=db-0",
			args:    `{"cni":{"pools":["fast"],"tier":"gold","K8S_POD_NAMESPACE":"shop","ips":["10.211.1.9/24"],"replicas":3}}`,
		}, want: attachment{namespace: "shop", podName: "db-0", ifname: "net1",
			args:   map[string]string{"IgnoreUnknown": "1", "K8S_POD_NAMESPACE": "shop", "K8S_POD_NAME": "db-0", "tier": "gold"},
			choice: []askedPool{{"fast", "args.cni.pools"}},
		}},
		{name: "CONVENTIONS.md labels", in: input{
			args: `{"cni":{"labels":[{"key":"app","value":"db"},{"key":"env","value":""}]}}`,
		}, want: attachment{ifname: "eth0", args: map[string]string{}, labels: map[string]string{"app": "db", "env": ""}}},
		{name: "annotation and args.cni choices merge, annotation first", in: input{
			args:          `{"cni":{"pools":["b","a"]}}`,
			runtimeConfig: `{"io.kubernetes.cri.pod-annotations":{"cniplugins.io/pools":"a"}}`,
		}, want: attachment{ifname: "eth0", args: map[string]string{},
			annotations: map[string]string{"cniplugins.io/pools": "a"},
			choice:      []askedPool{{"a", "annotation cniplugins.io/pools"}, {"b", "args.cni.pools"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ifname := tt.in.ifname
			if ifname == "" {
				ifname = "eth0"
			}
			env := argsEnvelope(t, `"defaultPools":["d"]`, tt.in)
			keys, err := argsArgKeys(env)
			if err != nil {
				t.Fatal(err)
			}
			cniArgs, err := netconf.ParseCNIArgs(tt.in.cniArgs, keys)
			if err != nil {
				t.Fatal(err)
			}
			got, err := normalise(ifname, cniArgs, env, netconf.NamespaceFromEither)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestNormaliseRejects(t *testing.T) {
	tests := []struct {
		name  string
		in    input
		field string
	}{
		{"labels not key/value objects", input{args: `{"cni":{"labels":{"app":"db"}}}`}, "args.cni.labels"},
		{"label without key", input{args: `{"cni":{"labels":[{"value":"db"}]}}`}, "args.cni.labels[0].key"},
		{"pools not strings", input{args: `{"cni":{"pools":[1]}}`}, "args.cni.pools"},
		{"annotations not strings", input{runtimeConfig: `{"io.kubernetes.cri.pod-annotations":{"a":1}}`}, `runtimeConfig["io.kubernetes.cri.pod-annotations"]`},
		{"ip not an address", input{runtimeConfig: `{"io.kubernetes.cri.pod-annotations":{"cniplugins.io/ip":"fe80::1%eth0"}}`}, `cniplugins.io/ip`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := normalise("eth0", nil, argsEnvelope(t, `"defaultPools":["d"]`, tt.in), netconf.NamespaceFromEither)
			e := cnierr.As(err)
			if e == nil || e.Code != 7 || !strings.Contains(e.Msg+" "+e.Details, tt.field) {
				t.Errorf("got %v; want code 7 naming %s", err, tt.field)
			}
		})
	}
}
