package dapools

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
)

var fuzzCommands = []string{plugin.CmdAdd, plugin.CmdDel, plugin.CmdCheck, plugin.CmdGC, plugin.CmdStatus}

// runFuzzed runs ipam-da-pools in-process and checks the output contract:
// exit 0, or exactly one JSON error object with a real code (never 999).
func runFuzzed(t *testing.T, cmd, cniArgs string, stdin []byte) (int, []byte) {
	t.Helper()
	env := []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=fuzz-ctr", "CNI_IFNAME=eth0",
		"CNI_NETNS=/var/run/netns/fuzz", "CNI_PATH=/nonexistent", "CNI_ARGS=" + cniArgs}
	var stdout, stderr bytes.Buffer
	exit := plugin.Run(Personality(nil), plugin.IO{Environ: env, Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	if _, err := plugintest.CheckOutput(exit, stdout.Bytes()); err != nil {
		t.Fatalf("%s: %v\nstdin: %s\nstderr: %s", cmd, err, stdin, stderr.Bytes())
	}
	return exit, stdout.Bytes()
}

func reservations(t *testing.T, dir string) []string {
	t.Helper()
	r, err := plugintest.Reservations(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// FuzzPersonality runs ipam-da-pools on a fuzzed config (its dataDir
// pinned to a fresh temporary directory) and CNI_ARGS: it succeeds or
// prints one typed error; a failed ADD leaves no reservation behind; a
// successful ADD is undone completely by DEL of the same attachment.
func FuzzPersonality(f *testing.F) {
	f.Fuzz(func(t *testing.T, cmd uint8, cniArgs string, stdin []byte) {
		if strings.ContainsRune(cniArgs, 0) {
			return // cannot be passed through execve
		}
		dataDir := t.TempDir()
		stdin = plugintest.PinDataDir(stdin, dataDir)
		command := fuzzCommands[int(cmd)%len(fuzzCommands)]
		exit, _ := runFuzzed(t, command, cniArgs, stdin)
		if command != plugin.CmdAdd {
			return
		}
		if exit != 0 {
			if r := reservations(t, dataDir); len(r) > 0 {
				t.Fatalf("failed ADD left reservations %v", r)
			}
			return
		}
		if len(reservations(t, dataDir)) == 0 {
			t.Fatalf("successful ADD reserved nothing")
		}
		if exit, out := runFuzzed(t, plugin.CmdDel, cniArgs, stdin); exit != 0 {
			// ADD reads only prevResult.pools; DEL also decodes
			// prevResult.ips, and may refuse a malformed one (code 6).
			if _, err := plugintest.ParsePrevResult(stdin); err == nil {
				t.Fatalf("DEL after a successful ADD failed: %s", out)
			}
			return
		}
		// A sticky key (ipam.sticky, or prevResult.sticky) keeps its
		// addresses held after DEL: those files are "_sticky <ID>".
		for _, r := range reservations(t, dataDir) {
			if b, err := os.ReadFile(filepath.Join(dataDir, r)); err != nil || !strings.HasPrefix(string(b), "_sticky\r\n") {
				t.Fatalf("DEL after ADD left reservation %s: %q %v", r, b, err)
			}
		}
	})
}
