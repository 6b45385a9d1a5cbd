package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// BenchmarkInProcessAddDel runs ipam-da-pools' ADD then DEL of a fresh
// container through plugin.Run, in this process, on an empty pool: the
// personality's own work (config decoding, locking, file operations,
// result encoding) without exec, runtime start-up or a cold heap. Set
// against the harness's per-exec ADD and DEL times it splits their cost
// into "work" and "being a new process".
func BenchmarkInProcessAddDel(b *testing.B) {
	s := subject{key: kStandalone, ipam: rangesIPAM("ipam-da-pools"), stateDir: networkDir}
	dataDir := b.TempDir()
	conf := s.conf(dataDir, nil)
	run := func(cmd, cid string, stdin []byte) []byte {
		var out, errb bytes.Buffer
		pio := plugin.IO{
			Environ: []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + cid, "CNI_NETNS=" + netnsPath,
				"CNI_IFNAME=" + ifname, "CNI_PATH=/nonexistent"},
			Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb,
		}
		if code := plugin.Run(dapools.Personality(), pio); code != 0 {
			b.Fatalf("%s: exit %d: %s %s", cmd, code, out.Bytes(), errb.Bytes())
		}
		return out.Bytes()
	}
	add := func(i int) []byte { return run("ADD", containerID(fmt.Sprint("inproc-", i)), conf) }
	del := func(i int, res []byte) { run("DEL", containerID(fmt.Sprint("inproc-", i)), s.conf(dataDir, res)) }
	del(-1, add(-1)) // creates the directory, the index and the recycled inodes
	b.Run("ADD+DEL", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			del(i, add(i))
		}
	})
	b.Run("ADD", func(b *testing.B) {
		// DEL untimed, so that every ADD sees the same state.
		for i := 0; b.Loop(); i++ {
			res := add(i)
			b.StopTimer()
			del(i, res)
			b.StartTimer()
		}
	})
}
