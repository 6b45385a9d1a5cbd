// Command fullflavour is the part of `make bench` about the full flavour
// (cmd/cniplugins-full), measured side by side in one run:
//
//   - what linking the network-facing pieces costs every exec: VERSION
//     and ipam-da-pools ADD+DEL of the lean and the full binary, and
//     their package init time (GODEBUG=inittrace=1), interleaved;
//   - the docker-ipam driver: RequestAddress+ReleaseAddress over its unix
//     socket, state writes under the lock included;
//   - `docker run --rm busybox true` on a network using the driver vs one
//     using Docker's built-in IPAM, under a private dockerd (skipped, and
//     said so, where none can run).
//
// It writes FULL-FLAVOUR.md into -out.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
	"github.com/cniplugins/cniplugins/internal/testkit"
)

func main() {
	out := flag.String("out", "bench/results", "directory for FULL-FLAVOUR.md")
	nExec := flag.Int("n", 200, "exec iterations per binary (VERSION, ADD+DEL)")
	nInit := flag.Int("n-init", 15, "GODEBUG=inittrace=1 runs per binary")
	nSocket := flag.Int("n-socket", 2000, "RequestAddress+ReleaseAddress pairs over the socket")
	nDocker := flag.Int("n-docker", 15, "docker run --rm per network")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "cnpd-bench-")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(tmp)
	var r report
	r.started, r.loadBefore = time.Now(), loadAvg()
	logf("building the lean and the full binary")
	bins, err := buildFlavours(tmp)
	if err != nil {
		fatalf("%v", err)
	}
	r.sizes = [2]int64{benchstat.FileSize(bins[0].bin), benchstat.FileSize(bins[1].bin)}
	logf("exec: %d VERSION and ADD+DEL per binary, %d inittrace runs, interleaved", *nExec, *nInit)
	if r.exec, err = measureExec(bins, tmp, *nExec, *nInit); err != nil {
		fatalf("%v", err)
	}
	logf("driver socket: %d RequestAddress+ReleaseAddress pairs", *nSocket)
	if r.socket, err = measureSocket(bins[1].bin, tmp, *nSocket); err != nil {
		fatalf("%v", err)
	}
	logf("docker run --rm: %d per network", *nDocker)
	r.docker, r.dockerSkip = measureDocker(bins[1].bin, tmp, *nDocker)
	r.elapsed, r.loadAfter = time.Since(r.started), loadAvg()

	md := r.markdown()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatalf("%v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "FULL-FLAVOUR.md"), []byte(md), 0o644); err != nil {
		fatalf("%v", err)
	}
	fmt.Print(md)
}

// flavourBin is one flavour's binary, installed with its links.
type flavourBin struct {
	name, bin, cniDir string
}

// buildFlavours builds both with the Makefile's recipe (static, stripped)
// and installs each with install-symlinks.sh into its own bin dir.
func buildFlavours(tmp string) ([2]flavourBin, error) {
	var out [2]flavourBin
	dir := filepath.Join(tmp, "build")
	if err := testkit.MakeIn(dir, nil, testkit.Binary(""), testkit.Binary("full")); err != nil {
		return out, err
	}
	for i, f := range []struct{ name, flavour string }{{"lean", ""}, {"full", "full"}} {
		b := flavourBin{name: f.name, bin: filepath.Join(dir, testkit.Binary(f.flavour)), cniDir: filepath.Join(tmp, f.name+"-bin")}
		if err := testkit.Install(b.bin, b.cniDir); err != nil {
			return out, err
		}
		out[i] = b
	}
	return out, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench fullflavour: "+format+"\n", args...)
}

func fatalf(format string, args ...any) {
	logf(format, args...)
	os.Exit(1)
}
