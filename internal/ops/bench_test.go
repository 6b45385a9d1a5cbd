package ops

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// bigFill is a data dir holding one network with 60,000 reservations,
// each its own file with its own container ID, as a long-running
// host-local would leave it. Creating 60,000 inodes takes several
// seconds, so it is made once per test binary run.
var bigFill = struct {
	once          sync.Once
	root, dataDir string
	conf          string
	err           error
}{}

const bigCount = 60000

func fillBig(b *testing.B) (dataDir, conf string) {
	b.Helper()
	bigFill.once.Do(func() {
		bigFill.root, bigFill.err = os.MkdirTemp("", "cniplugins-ops-bench-")
		if bigFill.err != nil {
			return
		}
		bigFill.dataDir = filepath.Join(bigFill.root, "data")
		dir := filepath.Join(bigFill.dataDir, "big")
		if bigFill.err = os.MkdirAll(dir, 0o755); bigFill.err != nil {
			return
		}
		ip := netip.MustParseAddr("10.10.0.2")
		for i := range bigCount {
			content := fmt.Sprintf("%064x\r\neth0", i)
			if bigFill.err = os.WriteFile(filepath.Join(dir, ip.String()), []byte(content), 0o644); bigFill.err != nil {
				return
			}
			ip = ip.Next()
		}
		bigFill.conf = filepath.Join(bigFill.root, "big.conflist")
		bigFill.err = os.WriteFile(bigFill.conf, []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"big","plugins":[{"type":"bridge",
			"ipam":{"type":"ipam-da-pools","dataDir":%q,"ranges":[[{"subnet":"10.10.0.0/16"}]]}}]}`, bigFill.dataDir)), 0o644)
	})
	if bigFill.err != nil {
		b.Fatal(bigFill.err)
	}
	return bigFill.dataDir, bigFill.conf
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigFill.root != "" {
		os.RemoveAll(bigFill.root)
	}
	os.Exit(code)
}

// cpuTime is the CPU (user + system) this process, or its waited-for
// children, has used: on a shared machine wall time mostly measures the
// neighbours, so the benchmarks also report CPU per operation.
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ms/op metric for the loop that follows it.
func reportCPU(b *testing.B, who int) func() {
	start := cpuTime(who)
	return func() {
		b.ReportMetric(float64(cpuTime(who)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}

// BenchmarkLeases60k is `leases`' work over 60,000 reservations: one
// directory listing, then one open, fstat and read per file.
func BenchmarkLeases60k(b *testing.B) {
	dataDir, _ := fillBig(b)
	b.ResetTimer()
	defer reportCPU(b, syscall.RUSAGE_SELF)()
	for b.Loop() {
		ls, err := Local{DataDir: dataDir}.Leases(LeaseFilter{})
		if err != nil || len(ls) != bigCount {
			b.Fatalf("%d leases, %v", len(ls), err)
		}
	}
}

// BenchmarkPools60k is `pools`' work: configuration, one listing of
// names (no file is opened) and the counts.
func BenchmarkPools60k(b *testing.B) {
	dataDir, conf := fillBig(b)
	b.ResetTimer()
	defer reportCPU(b, syscall.RUSAGE_SELF)()
	for b.Loop() {
		plugins, problems := LoadPlugins([]string{conf})
		if len(problems) > 0 {
			b.Fatal(problems)
		}
		n, _, err := Describe(plugins[0], dataDir)
		if err != nil {
			b.Fatal(err)
		}
		us, err := UsagesIn(Local{}, []Network{n})
		if err != nil || us[0].Used != bigCount {
			b.Fatalf("%+v %v", us, err)
		}
	}
}

// BenchmarkExec60k runs the real binary as an operator does, output to
// /dev/null: the figure README quotes.
func BenchmarkExec60k(b *testing.B) {
	dataDir, conf := fillBig(b)
	bin, err := testkit.Build(b.TempDir(), "")
	if err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{
		{"leases", "--data-dir", dataDir},
		{"leases", "--data-dir", dataDir, "-o", "json"},
		{"pools", "--conf", conf},
		{"pools", "--conf", conf, "-o", "prom"},
		{"fsck", "--data-dir", dataDir},
	} {
		b.Run(benchName(args), func(b *testing.B) {
			defer reportCPU(b, syscall.RUSAGE_CHILDREN)()
			for b.Loop() {
				if err := exec.Command(bin, args...).Run(); err != nil {
					b.Fatalf("%v: %v", args, err)
				}
			}
		})
	}
}

// benchName is "leases", "leases-json", "pools-prom"...
func benchName(args []string) string {
	name := args[0]
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			name += "-" + args[i+1]
		}
	}
	return name
}

// BenchmarkLeasesJSON60k adds the JSON encoding `leases -o json` does.
func BenchmarkLeasesJSON60k(b *testing.B) {
	dataDir, _ := fillBig(b)
	b.ResetTimer()
	defer reportCPU(b, syscall.RUSAGE_SELF)()
	for b.Loop() {
		ls, err := Local{DataDir: dataDir}.Leases(LeaseFilter{})
		if err == nil {
			err = json.NewEncoder(io.Discard).Encode(ls)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
