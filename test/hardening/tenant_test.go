package hardening

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// nsConf is ipam-delegated → ipam-ds-args → ipam-da-pools with a sticky
// pool per namespace (prod, dev), namespaceFrom from ("" unset), and
// args as the invocation's args object when non-nil.
func nsConf(dataDir, from string, args map[string]any) []byte {
	ipam := map[string]any{
		"type": "ipam-delegated", "delegates": []string{"ipam-ds-args", "ipam-da-pools"}, "dataDir": dataDir,
		"rules": []any{
			map[string]any{"namespace": "prod", "pools": []string{"prod"}, "sticky": true},
			map[string]any{"namespace": "dev", "pools": []string{"dev"}, "sticky": true},
		},
		"poolDefinitions": map[string]any{
			"prod": []any{map[string]string{"subnet": "10.211.40.0/24"}},
			"dev":  []any{map[string]string{"subnet": "10.211.41.0/24"}},
		},
	}
	if from != "" {
		ipam["namespaceFrom"] = from
	}
	conf := map[string]any{"cniVersion": "1.1.0", "name": "ns-tenants", "ipam": ipam}
	if args != nil {
		conf["args"] = args
	}
	b, _ := json.Marshal(conf)
	return b
}

// A job or pod author cannot pose as another namespace: prod/db-0 holds a
// sticky address in prod; a dev job that also sends K8S_POD_NAMESPACE=prod
// and K8S_POD_NAME=db-0 in its CNI args (Nomad's network.cni.args), or puts
// them in args.cni, gets code 7 naming both sources, and prod's pool (its
// reservations and db-0's hold) stays as it was. With namespaceFrom nomad,
// a dev job's pod name keys a hold in dev only.
func TestNamespaceSpoof(t *testing.T) {
	dataDir := t.TempDir()
	prod := call("ipam-delegated", "ADD", "prod-db-0", nsConf(dataDir, "", nil))
	prod.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=db-0;K8S_POD_UID=1"
	held := firstAddr(t, testbin.MustSucceed(t, prod).Stdout)
	del := prod
	del.Command = "DEL"
	testbin.MustSucceed(t, del)
	prodDir := filepath.Join(dataDir, "_pools", "prod")
	before := snapshot(t, prodDir)

	for _, tt := range []struct {
		name, from, args string
		cni              map[string]any
		names            []string
	}{
		{name: "Nomad job with K8S keys", args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=db-0;NOMAD_NAMESPACE=dev;NOMAD_JOB_ID=x",
			names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "namespaceFrom nomad", from: "nomad", args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=db-0;NOMAD_NAMESPACE=dev",
			names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "a job's NOMAD_NAMESPACE before Nomad's", from: "nomad", args: "IgnoreUnknown=true;NOMAD_NAMESPACE=prod;K8S_POD_NAME=db-0;NOMAD_NAMESPACE=dev",
			names: []string{`NOMAD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "namespaceFrom kubernetes, Nomad job", from: "kubernetes", args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=db-0;NOMAD_NAMESPACE=dev",
			names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "args.cni namespace", args: "IgnoreUnknown=true;K8S_POD_NAME=db-0;NOMAD_NAMESPACE=dev",
			cni: map[string]any{"K8S_POD_NAMESPACE": "prod"}, names: []string{"args.cni.K8S_POD_NAMESPACE", `"prod"`}},
		{name: "args.cni pod name", args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web-0",
			cni: map[string]any{"K8S_POD_NAME": "db-0"}, names: []string{"args.cni.K8S_POD_NAME", `"db-0"`, `"web-0"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var args map[string]any
			if tt.cni != nil {
				args = map[string]any{"cni": tt.cni}
			}
			c := call("ipam-delegated", "ADD", "spoof", nsConf(dataDir, tt.from, args))
			c.Args = tt.args
			refusedNaming(t, testbin.Run(c), "prod/db-0", held, tt.names)
			if d := diff(before, snapshot(t, prodDir), ""); len(d) != 0 {
				t.Errorf("prod's pool changed: %v", d)
			}
		})
	}

	// namespaceFrom nomad: a dev job's K8S_POD_NAME keys a dev hold.
	c := call("ipam-delegated", "ADD", "dev-job", nsConf(dataDir, "nomad", nil))
	c.Args = "IgnoreUnknown=true;K8S_POD_NAME=db-0;NOMAD_NAMESPACE=dev"
	if got := firstAddr(t, testbin.MustSucceed(t, c).Stdout); !strings.HasPrefix(got, "10.211.41.") {
		t.Errorf("dev job got %s, want an address of dev (10.211.41.0/24)", got)
	}
	if d := diff(before, snapshot(t, prodDir), ""); len(d) != 0 {
		t.Errorf("prod's pool changed: %v", d)
	}
}
