package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/registry"
)

// BenchmarkInProcessAddDel runs ipam-da-pools' ADD then DEL of a fresh
// container through plugin.Run, in this process, on an empty pool: the
// personality's own work (config decoding, locking, file operations,
// result encoding) without exec, runtime start-up or a cold heap. Set
// against the harness's per-exec ADD and DEL times it splits their cost
// into "work" and "being a new process".
//
// The sticky variants are the exec harness's (sticky.go) in process:
// "recreate" cycles over stickyKeys keys, "new key" never repeats one.
func BenchmarkInProcessAddDel(b *testing.B) {
	for _, variant := range stickyVariants {
		b.Run("sticky "+variant, func(b *testing.B) { benchInProcess(b, variant) })
	}
}

func benchInProcess(b *testing.B, variant string) {
	s := subject{key: kStandalone, ipam: rangesIPAM("ipam-da-pools"), stateDir: networkDir}
	if variant != "off" {
		s.ipam["sticky"] = map[string]any{"by": []string{"arg"}}
	}
	dataDir := b.TempDir()
	conf := s.conf(dataDir, nil)
	run := func(cmd string, i int, stdin []byte) []byte {
		args := ""
		switch variant {
		case "recreate":
			args = fmt.Sprintf("%s=bench/set-%d", alloc.ArgStickyKey, (i+stickyKeys)%stickyKeys)
		case "new key":
			args = fmt.Sprintf("%s=bench/%d", alloc.ArgStickyKey, i)
		}
		var out, errb bytes.Buffer
		pio := plugin.IO{
			Environ: []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + containerID(fmt.Sprint("inproc-", i)),
				"CNI_NETNS=" + netnsPath, "CNI_IFNAME=" + ifname, "CNI_PATH=/nonexistent", "CNI_ARGS=" + args},
			Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb,
		}
		if code := plugin.Run(dapools.Personality(nil), pio); code != 0 {
			b.Fatalf("%s: exit %d: %s %s", cmd, code, out.Bytes(), errb.Bytes())
		}
		return out.Bytes()
	}
	add := func(i int) []byte { return run("ADD", i, conf) }
	del := func(i int, res []byte) { run("DEL", i, s.conf(dataDir, res)) }
	// The first round creates the directory, the index, the recycled
	// inodes and, for "recreate", every key's hold.
	for i := -stickyKeys; i < 0; i++ {
		del(i, add(i))
	}
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

// BenchmarkInProcessTenancy runs the tenancy scenario's chain
// (ipam-delegated → ipam-ds-args → ipam-da-pools, tenancy.go) in this
// process, plain and with a quota and an overflow chain: the chain's own
// work without the process start that the exec harness also times.
// ipam-delegated runs its delegates in-process when they are this
// executable, so CNI_PATH holds links to the test binary.
func BenchmarkInProcessTenancy(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cniPath := b.TempDir()
	for _, name := range []string{"ipam-ds-args", "ipam-da-pools"} {
		if err := os.Symlink(self, filepath.Join(cniPath, name)); err != nil {
			b.Fatal(err)
		}
	}
	p, ok := registry.Lean().Lookup("ipam-delegated")
	if !ok {
		b.Fatal("no ipam-delegated in the lean table")
	}
	for _, variant := range tenancyVariants {
		b.Run(variant, func(b *testing.B) {
			s := subject{key: variant, ipam: tenancyIPAM(variant), stateDir: poolDir}
			dataDir := b.TempDir()
			run := func(cmd string, i int, stdin []byte) []byte {
				var out, errb bytes.Buffer
				pio := plugin.IO{
					Environ: []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + containerID(fmt.Sprint("inproc-", i)),
						"CNI_NETNS=" + netnsPath, "CNI_IFNAME=" + ifname, "CNI_PATH=" + cniPath, tenancyArgs},
					Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb,
				}
				if code := plugin.Run(p, pio); code != 0 {
					b.Fatalf("%s: exit %d: %s %s", cmd, code, out.Bytes(), errb.Bytes())
				}
				return out.Bytes()
			}
			for i := 0; b.Loop(); i++ {
				res := run("ADD", i, s.conf(dataDir, nil))
				b.StopTimer()
				run("DEL", i, s.conf(dataDir, res))
				b.StartTimer()
			}
		})
	}
}
