package dsselect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// FuzzArgsAttachment runs ipam-ds-args (namespaceFrom kubernetes) on a
// fixed config with fuzzed CNI_ARGS, pod annotations (cniplugins.io/pools,
// cniplugins.io/ip, cniplugins.io/sticky-key) and args.cni: everything a
// pod or job author may write. Beyond fuzzSelector's contract, ADD and
// CHECK never select namespace prod's pool, and no command carries a
// sticky key in prod that the annotation did not spell, unless CNI_ARGS'
// K8S_POD_NAMESPACE is prod.
func FuzzArgsAttachment(f *testing.F) {
	f.Add(uint8(0), "IgnoreUnknown=1;K8S_POD_NAMESPACE=dev;K8S_POD_NAME=db-0", "fast", "10.211.2.9", "", `{"tier":"x"}`)
	f.Add(uint8(0), "IgnoreUnknown=1;NOMAD_NAMESPACE=dev;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=db-0", "", "", "prod/db-0", `{}`)
	f.Add(uint8(0), "IgnoreUnknown=1;K8S_POD_NAME=db-0", "prod", "", "prod/db-0", `{"K8S_POD_NAMESPACE":"prod","pools":["prod"]}`)
	f.Add(uint8(1), "K8S_POD_NAMESPACE=prod;K8S_POD_NAMESPACE=dev", strings.Repeat("p,", 100), "", "", `{"pools":["a","a"]}`)
	f.Fuzz(func(t *testing.T, cmd uint8, cniArgs, pools, ips, stickyKey, cniSection string) {
		annotations := map[string]string{"cniplugins.io/pools": pools, "cniplugins.io/ip": ips, "cniplugins.io/sticky-key": stickyKey}
		conf := map[string]any{"cniVersion": "1.1.0", "name": "n",
			"ipam": map[string]any{"namespaceFrom": "kubernetes",
				"rules": []any{
					map[string]any{"namespace": "prod", "pools": []any{map[string]string{"name": "prod", "subnet": "10.211.1.0/24"}}, "sticky": true},
					map[string]any{"namespace": "dev", "pools": []string{"dev"}, "podChoice": []string{"dev", "fast"}, "sticky": true},
				},
				"defaultPools":    []string{"d"},
				"poolDefinitions": map[string]any{"fast": []any{map[string]string{"subnet": "10.211.2.0/24"}}}},
			"runtimeConfig": map[string]any{podAnnotationsCap: annotations}}
		if json.Valid([]byte(cniSection)) {
			conf["args"] = map[string]any{"cni": json.RawMessage(cniSection)}
		}
		stdin, err := json.Marshal(conf)
		if err != nil {
			return // not valid UTF-8 where JSON needs it: nothing a runtime sends
		}
		out := fuzzSelector(t, Args(), cmd, stdin, "CNI_ARGS="+cniArgs)
		if out == nil || trustedNamespace(cniArgs) == "prod" {
			return
		}
		var res struct {
			Pools  []struct{ Name string } `json:"pools"`
			Sticky struct{ Key string }    `json:"sticky"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		command := fuzzCommands[int(cmd)%len(fuzzCommands)]
		for _, p := range res.Pools {
			if p.Name == "prod" && (command == plugin.CmdAdd || command == plugin.CmdCheck) { // DEL, GC and STATUS name every pool
				t.Fatalf("CNI_ARGS %q reached prod's pool: %s", cniArgs, out)
			}
		}
		if strings.HasPrefix(res.Sticky.Key, "prod/") && res.Sticky.Key != stickyKey {
			t.Fatalf("CNI_ARGS %q got prod's sticky key: %s", cniArgs, out)
		}
	})
}

// trustedNamespace is CNI_ARGS' last K8S_POD_NAMESPACE.
func trustedNamespace(cniArgs string) string {
	ns := ""
	for _, pair := range strings.Split(cniArgs, ";") {
		if k, v, _ := strings.Cut(pair, "="); k == netconf.ArgPodNamespace {
			ns = v
		}
	}
	return ns
}
