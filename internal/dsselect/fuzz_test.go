package dsselect

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/pool"
	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
)

var fuzzCommands = []string{plugin.CmdAdd, plugin.CmdDel, plugin.CmdCheck, plugin.CmdGC, plugin.CmdStatus}

// FuzzStatic runs ipam-ds-static on a fuzzed config (see fuzzSelector).
func FuzzStatic(f *testing.F) {
	f.Fuzz(func(t *testing.T, cmd uint8, stdin []byte) { fuzzSelector(t, Static(), cmd, stdin) })
}

// fuzzSelector runs selector p on a fuzzed config (and extraEnv, such as
// a fuzzed CNI_ARGS): it succeeds or prints
// one typed error (never 999), and what it prints on success is a result
// whose pools validate again and whose ips are valid. It returns what it
// printed on success, nil otherwise.
func fuzzSelector(t *testing.T, p plugin.Personality, cmd uint8, stdin []byte, extraEnv ...string) []byte {
	command := fuzzCommands[int(cmd)%len(fuzzCommands)]
	env := append([]string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=fuzz-ctr", "CNI_IFNAME=eth0",
		"CNI_NETNS=/var/run/netns/fuzz", "CNI_PATH=/nonexistent"}, extraEnv...)
	var stdout, stderr bytes.Buffer
	exit := plugin.Run(p, plugin.IO{Environ: env, Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	if _, err := plugintest.CheckOutput(exit, stdout.Bytes()); err != nil {
		t.Fatalf("%s: %v\nstdin: %s", command, err, stdin)
	}
	if exit != 0 {
		return nil
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
	return stdout.Bytes()
}
