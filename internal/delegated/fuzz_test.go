package delegated_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/delegated"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/registry"
	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
)

var fuzzCommands = []string{plugin.CmdAdd, plugin.CmdDel, plugin.CmdCheck, plugin.CmdGC, plugin.CmdStatus}

// FuzzChain runs ipam-delegated on a fuzzed config, with ipam-ds-static,
// ipam-da-pools and ipam-delegated itself in CNI_PATH as links to this test
// binary, so every delegate runs in-process (nothing is ever exec'd) and
// its dataDir pinned to a fresh temporary directory. It succeeds or prints
// one typed error (never 999, never a crash), and a failed ADD leaves no
// reservation behind (rollback).
func FuzzChain(f *testing.F) {
	self, err := os.Executable()
	if err != nil {
		f.Fatal(err)
	}
	binDir := f.TempDir()
	for _, name := range []string{delegated.Name, dsselect.StaticName, dapools.Name} {
		if err := os.Symlink(self, filepath.Join(binDir, name)); err != nil {
			f.Fatal(err)
		}
	}
	p, ok := registry.Lean().Lookup(delegated.Name)
	if !ok {
		f.Fatal("ipam-delegated not registered")
	}
	f.Fuzz(func(t *testing.T, cmd uint8, stdin []byte) {
		dataDir := t.TempDir()
		stdin = plugintest.PinDataDir(stdin, dataDir)
		command := fuzzCommands[int(cmd)%len(fuzzCommands)]
		env := []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=fuzz-ctr", "CNI_IFNAME=eth0",
			"CNI_NETNS=/var/run/netns/fuzz", "CNI_PATH=" + binDir}
		var stdout, stderr bytes.Buffer
		exit := plugin.Run(p, plugin.IO{Environ: env, Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
		if _, err := plugintest.CheckOutput(exit, stdout.Bytes()); err != nil {
			t.Fatalf("%s: %v\nstdin: %s\nstderr: %s", command, err, stdin, stderr.Bytes())
		}
		if command == plugin.CmdAdd && exit != 0 {
			r, err := plugintest.Reservations(dataDir)
			if err != nil || len(r) > 0 {
				t.Fatalf("failed ADD left reservations %v (%v)", r, err)
			}
		}
	})
}
