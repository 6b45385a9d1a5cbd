package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

type report struct {
	loadBefore string // /proc/loadavg, before and after: the machine's other work
	loadAfter  string
	started    time.Time
	elapsed    time.Duration
	sizes      [2]int64
	exec       [2]execResult
	socket     []time.Duration
	docker     dockerResult
	dockerSkip string
}

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	host, _ := os.Hostname()
	w("# The full flavour: cost and driver figures\n\n")
	w("Run %s on %s (%d CPUs, %s/%s, %s), %s. Written by `go run ./bench/fullflavour` (part of `make bench`); every pair of figures below was measured side by side, interleaved, in this one run.\n\n",
		r.started.UTC().Format(time.RFC3339), host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), r.elapsed.Round(time.Second))
	w("Load average (1, 5, 15 min) before: %s; after: %s. Absolute times grow with the machine's other work; the ratios, measured interleaved, much less.\n\n", r.loadBefore, r.loadAfter)
	w("Statistics as in RESULTS.md: a median (p50) is the middle value, the mean of the middle two for an even count; p90 and p99 are by nearest rank, the smallest measured value with at least that share of the sample at or below it.\n\n")

	w("## Lean vs full binary, per exec\n\n")
	w("| | lean `cniplugins` | full `cniplugins-full` | full / lean |\n| --- | ---: | ---: | ---: |\n")
	w("| static binary size | %.2f MB | %.2f MB | %.2f× |\n", float64(r.sizes[0])/1e6, float64(r.sizes[1])/1e6, benchstat.Ratio(float64(r.sizes[1]), float64(r.sizes[0])))
	row := func(label string, get func(execResult) []time.Duration) {
		l, f := benchstat.Median(get(r.exec[0])), benchstat.Median(get(r.exec[1]))
		w("| %s, median | %.3f ms | %.3f ms | %.2f× |\n", label, benchstat.MS(l), benchstat.MS(f), benchstat.Ratio(float64(f), float64(l)))
	}
	row("VERSION (exec floor of a personality)", func(e execResult) []time.Duration { return e.version })
	row("ipam-da-pools ADD", func(e execResult) []time.Duration { return e.add })
	row("ipam-da-pools DEL", func(e execResult) []time.Duration { return e.del })
	li, fi := benchstat.Median(r.exec[0].initMS), benchstat.Median(r.exec[1].initMS)
	w("| package init clock (GODEBUG=inittrace=1), median | %.3f ms | %.3f ms | %.2f× |\n", li, fi, benchstat.Ratio(fi, li))
	w("| packages initialised | %d | %d | |\n\n", benchstat.Median(r.exec[0].initPkgs), benchstat.Median(r.exec[1].initPkgs))
	w("n = %d execs of each kind per binary, %d inittrace runs. The lean binary is what `make build` installs by default; these rows are what it would cost every CNI call if the network-facing pieces were linked into it.\n\n", len(r.exec[0].add), len(r.exec[0].initMS))

	w("## docker-ipam over its unix socket\n\n")
	w("| RequestAddress + ReleaseAddress | p50 | p90 | p99 | target |\n| --- | ---: | ---: | ---: | --- |\n")
	p50 := benchstat.Median(r.socket)
	w("| one pair, state written under the pool's lock (n = %d) | %.3f ms | %.3f ms | %.3f ms | p50 ≤ 1 ms: %s |\n\n",
		len(r.socket), benchstat.MS(p50), benchstat.MS(benchstat.Quantile(r.socket, 0.9)), benchstat.MS(benchstat.Quantile(r.socket, 0.99)), met(p50 <= time.Millisecond))

	w("## `docker run --rm busybox true`\n\n")
	if r.dockerSkip != "" {
		w("Not measured: %s.\n", r.dockerSkip)
		return b.String()
	}
	d, bi := benchstat.Median(r.docker.driver), benchstat.Median(r.docker.builtin)
	ratio := benchstat.Ratio(float64(d), float64(bi))
	w("Private dockerd %s (vfs storage, no iptables), a busybox-static image, two bridge networks alike but for their IPAM, runs alternated (n = %d each).\n\n", r.docker.version, len(r.docker.driver))
	w("| network IPAM | median | p90 |\n| --- | ---: | ---: |\n")
	w("| docker-ipam (this driver) | %.1f ms | %.1f ms |\n", benchstat.MS(d), benchstat.MS(benchstat.Quantile(r.docker.driver, 0.9)))
	w("| Docker's built-in | %.1f ms | %.1f ms |\n\n", benchstat.MS(bi), benchstat.MS(benchstat.Quantile(r.docker.builtin, 0.9)))
	w("Ratio of medians: %.3f (target ≤ 1.1: %s).\n", ratio, met(ratio <= 1.1))
	return b.String()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
