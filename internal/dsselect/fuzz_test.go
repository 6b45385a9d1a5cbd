package dsselect

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/plugin/plugintest"
	"github.com/cniplugins/cniplugins/internal/pool"
)

var fuzzCommands = []string{plugin.CmdAdd, plugin.CmdDel, plugin.CmdCheck, plugin.CmdGC, plugin.CmdStatus}

// FuzzStatic runs ipam-ds-static on a fuzzed config: it succeeds or prints
// one typed error (never 999), and what it prints on success is a result
// whose pools validate again and whose ips are valid.
func FuzzStatic(f *testing.F) {
	f.Fuzz(func(t *testing.T, cmd uint8, stdin []byte) {
		fuzzSelector(t, Static(), cmd, "", stdin)
	})
}

// FuzzArgs is FuzzStatic for ipam-ds-args, with a fuzzed CNI_ARGS too: the
// rules, the runtime's inputs and the annotations all come from outside.
func FuzzArgs(f *testing.F) {
	f.Add(uint8(0), "IgnoreUnknown=1;K8S_POD_NAMESPACE=a;K8S_POD_NAME=db-1", []byte(`{"cniVersion":"1.1.0","name":"n",
		"ipam":{"rules":[{"namespace":"a","podName":"db-*","pools":[{"name":"a","subnet":"10.211.1.0/24"}],"podChoice":["a","f"]}],"defaultPools":["d"],
		"poolDefinitions":{"f":[{"subnet":"10.211.2.0/24"}]}},
		"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"cniplugins.io/pools":"f","cniplugins.io/ip":"10.211.2.9"}},
		"args":{"cni":{"labels":[{"key":"app","value":"x"}],"pools":["a"]}}}`))
	f.Add(uint8(1), "", []byte(`{"cniVersion":"1.1.0","name":"n","ipam":{"rules":[{"args":{"K":"[a"},"pools":["x"]}]}}`))
	f.Fuzz(func(t *testing.T, cmd uint8, cniArgs string, stdin []byte) {
		fuzzSelector(t, Args(), cmd, cniArgs, stdin)
	})
}

// fuzzSelector runs p once and checks what a selector must print.
func fuzzSelector(t *testing.T, p plugin.Personality, cmd uint8, cniArgs string, stdin []byte) {
	command := fuzzCommands[int(cmd)%len(fuzzCommands)]
	env := []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=fuzz-ctr", "CNI_IFNAME=eth0",
		"CNI_NETNS=/var/run/netns/fuzz", "CNI_PATH=/nonexistent", "CNI_ARGS=" + cniArgs}
	var stdout, stderr bytes.Buffer
	exit := plugin.Run(p, plugin.IO{Environ: env, Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	if _, err := plugintest.CheckOutput(exit, stdout.Bytes()); err != nil {
		t.Fatalf("%s: %v\nstdin: %s", command, err, stdin)
	}
	if exit != 0 {
		return
	}
	var out struct {
		CNIVersion string          `json:"cniVersion"`
		Pools      json.RawMessage `json:"pools"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("result is not JSON: %v: %s", err, stdout.Bytes())
	}
	if _, err := pool.ParseList(out.Pools, "pools"); err != nil {
		t.Fatalf("printed pools do not validate: %v: %s", err, stdout.Bytes())
	}
	// The selection is the next delegate's prevResult: it must decode.
	conf := []byte(`{"cniVersion":"` + out.CNIVersion + `","name":"n","prevResult":` + stdout.String() + `}`)
	if _, err := plugintest.ParsePrevResult(conf); err != nil {
		t.Fatalf("printed result does not decode as a prevResult: %v: %s", err, stdout.Bytes())
	}
}
