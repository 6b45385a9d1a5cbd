package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// results is everything one run measured.
type results struct {
	opts       *options
	machine    machine
	fs         fsInfo
	bins       *binaries
	subs       []subject // every subject, available or not, in table order
	formats    map[string]format
	formatNote string
	latency    *latency
	conc       map[string]*concResult
	rss        map[string]*rssResult
	startup    []*startup
	syscalls   map[string]map[string]syscallCount // subject → ADD/DEL → counts
	etcd       *etcdResult                        // the ipam-da-etcd scenario (etcd.go)
	sticky     *stickyResult                      // the sticky scenario (sticky.go)
	tenancy    *tenancyResult                     // the tenancy scenario (tenancy.go)
	notes      []string
	elapsed    time.Duration
}

func (r *results) note(s string) { r.notes = append(r.notes, s) }

func (r *results) available(key string) bool {
	for _, s := range r.subs {
		if s.key == key {
			return s.available()
		}
	}
	return false
}

// markdown renders RESULTS.md.
func (r *results) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	o := r.opts
	w("# cniplugins benchmark results\n\n")
	w("Written by `make bench` (`go run ./bench -out bench%s`); do not edit by hand. ", o.flags)
	w("Every operation is one process exec'd the way a CNI runtime does it (CNI_* environment, config on stdin, result on stdout), timed from fork to reaped. ")
	w("Subjects (and fill levels) take turns in a rotating order within each iteration, so machine noise hits all of them alike. ")
	w("Ratios are of medians from this one run. A median of an even count is the mean of the middle two; p99 is by nearest rank, so always a time actually measured.\n\n")

	w("## Machine\n\n| | |\n| --- | --- |\n")
	m := r.machine
	w("| date | %s |\n| commit | `%s` |\n| nproc | %s |\n| CPU | %s |\n| kernel | %s |\n| Go | %s |\n", m.date, m.commit, m.nproc, m.cpu, m.kernel, m.goVersion)
	w("| cniplugins | %s, %.1f MB (static, -trimpath, -s -w, installed by scripts/install-symlinks.sh) |\n", r.bins.version, mb(r.bins.oursSize))
	if r.bins.hostLocal != "" {
		w("| host-local | %s, %.1f MB%s |\n", r.bins.hostLocal, mb(r.bins.hostLocalSize), prefixed(", ", m.hostLocalPkg))
	} else {
		w("| host-local | not installed: n/a |\n")
	}
	w("| state directories | %s (%s): creating a small file %s µs, linking it %s µs (medians) |\n", o.tmp, r.fs.fsType,
		num(float64(r.fs.create)/1e3), num(float64(r.fs.link)/1e3))
	w("| exec floor | bench/floor: static Go binary that reads stdin and prints a fixed result, %.1f MB |\n", mb(r.bins.floorSize))
	w("| run | fills %s; n = %s; %d untimed ADD+DEL per subject and fill first; %s in all |\n\n",
		joinFills(o.fills), r.itersText(), o.warmup, r.elapsed.Round(time.Second))

	w("## Targets\n\n| target | measured (medians) | result |\n| --- | --- | --- |\n")
	for _, t := range r.targets() {
		w("| %s | %s | **%s** |\n", t.what, t.measured, t.v)
	}
	w("\n")

	r.latencyTable(w)
	r.concTable(w)
	r.rssTable(w)
	r.startupTable(w)
	r.boundTable(w)
	r.syscallTable(w)
	if r.sticky != nil {
		w("%s", r.sticky.markdown(r.fs.fsType))
	}
	if r.tenancy != nil {
		w("%s", r.tenancy.markdown(r.fs.fsType))
	}
	if r.etcd != nil {
		w("%s", r.etcd.markdown(r.machine.nproc))
	}

	if len(r.notes) > 0 || r.formatNote != "" {
		w("## Notes\n\n")
		if r.formatNote != "" {
			w("- %s\n", r.formatNote)
		}
		for _, n := range r.notes {
			w("- %s\n", n)
		}
		w("\n")
	}
	return b.String()
}

func (r *results) latencyTable(w func(string, ...any)) {
	w("## ADD and DEL latency vs pool fill\n\n")
	w("Median / p99 in ms. Fill 0 is the empty pool. At fill F the state directory holds F reservations (10.10.0.2 upwards, cursor on the last) written in each subject's own format before the first operation; each timed iteration visits every fill level and subject, in a rotating order, and ADDs a fresh container there and DELs it (prevResult = the ADD's result), so the fill stays constant and drift in machine load hits every cell alike. ")
	w("ipam-da-pools is standalone (`ranges`, state in `%s/`); chain is ipam-delegated → ipam-ds-static → ipam-da-pools (`pools`, state in `%s/`). Each subject has its own copy of the state.\n\n", networkDir("<dataDir>"), poolDir("<dataDir>"))
	w("| fill | op | n | ipam-da-pools | chain | host-local | exec floor | ipam-da-pools ÷ host-local | chain ÷ host-local | ipam-da-pools ÷ floor | chain ÷ floor |\n")
	w("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	if r.latency == nil {
		return
	}
	for _, fill := range r.latency.fills {
		for _, op := range latencyOps {
			cell := func(k string) string {
				if !r.available(k) {
					return "n/a"
				}
				s := r.latency.summary(fill, op, k)
				return fmt.Sprintf("%s / %s", num(benchstat.MS(s.median)), num(benchstat.MS(s.p99)))
			}
			rt := func(a, b string) string { return fmtRatio(benchstat.Ratio(r.medMS(fill, op, a), r.medMS(fill, op, b))) }
			w("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", fillLabel(fill), op, r.latency.iters[fill],
				cell(kStandalone), cell(kChain), cell(kHostLocal), cell(kFloor),
				rt(kStandalone, kHostLocal), rt(kChain, kHostLocal), rt(kStandalone, kFloor), rt(kChain, kFloor))
		}
	}
	w("\n![ADD median latency vs pool fill](ADD-latency.svg)\n\n")
	w("CPU time per operation (user+system from wait4's rusage; for the chain it includes any delegate it exec'd), median ms. On %s CPUs, concurrent throughput is bounded by about CPUs ÷ this:\n\n", r.machine.nproc)
	w("| fill | op | ipam-da-pools | chain | host-local | exec floor |\n| ---: | --- | ---: | ---: | ---: | ---: |\n")
	for _, fill := range r.latency.fills {
		for _, op := range latencyOps {
			cell := func(k string) string {
				xs := r.latency.cpu[latencyKey{fill, op, k}]
				if len(xs) == 0 {
					return "n/a"
				}
				return num(benchstat.MS(benchstat.Median(xs)))
			}
			w("| %s | %s | %s | %s | %s | %s |\n", fillLabel(fill), op, cell(kStandalone), cell(kChain), cell(kHostLocal), cell(kFloor))
		}
	}
	w("\n")
	w("First ADD on each freshly pre-filled directory (untimed above; for ours it includes rebuilding the index of a directory it has never seen, as after taking over from host-local), ms:\n\n")
	w("| fill | ipam-da-pools | chain | host-local | exec floor |\n| ---: | ---: | ---: | ---: | ---: |\n")
	for _, fill := range r.latency.fills {
		cell := func(k string) string {
			d, ok := r.latency.first[latencyKey{fill, "ADD", k}]
			if !ok {
				return "n/a"
			}
			return num(benchstat.MS(d))
		}
		w("| %s | %s | %s | %s | %s |\n", fillLabel(fill), cell(kStandalone), cell(kChain), cell(kHostLocal), cell(kFloor))
	}
	w("\n")
}

func (r *results) concTable(w func(string, ...any)) {
	o := r.opts
	w("## Concurrent ADDs\n\n")
	w("%d ADDs of distinct containers from %d workers, each ADD its own process, on an empty state directory; %d round(s) per subject, subjects alternating. Wall time from the first fork to the last reap. Per ADD: its mean fork-to-reap time in the burst, and the CPU (user+system) it used; with %s CPUs, ops/s can at best be CPUs ÷ CPU per ADD, so wall time well above that is waiting (for the lock, or for a lock holder that is not running).\n\n", o.concOps, o.concWork, o.concRounds, r.machine.nproc)
	w("| subject | wall median (ms) | wall range (ms) | ops/s | ÷ host-local | per ADD: latency / CPU (ms) | distinct addresses |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
	var hl float64 = math.NaN()
	if h := r.conc[kHostLocal]; h != nil {
		hl = h.opsPerSec(o.concOps)
	}
	for _, s := range r.subs {
		c := r.conc[s.key]
		if c == nil {
			w("| %s | n/a | n/a | n/a | n/a | n/a | n/a |\n", s.label)
			continue
		}
		lo, hi := c.runs[0].wall, c.runs[0].wall
		for _, run := range c.runs {
			lo, hi = min(lo, run.wall), max(hi, run.wall)
		}
		distinct := "all distinct"
		switch {
		case s.key == kFloor:
			distinct = "n/a (fixed result)"
		case !c.ok(o.concOps):
			distinct = "**FAIL**: " + c.describe(o.concOps)
		}
		w("| %s | %.0f | %.0f–%.0f | %.0f | %s | %s / %s | %s |\n", s.label, benchstat.MS(c.medianWall()), benchstat.MS(lo), benchstat.MS(hi),
			c.opsPerSec(o.concOps), fmtRatio(benchstat.Ratio(c.opsPerSec(o.concOps), hl)),
			num(benchstat.MS(c.perOp(o.concOps, func(r concRun) time.Duration { return r.latency }))),
			num(benchstat.MS(c.perOp(o.concOps, func(r concRun) time.Duration { return r.cpu }))), distinct)
	}
	w("\n")
}

func (r *results) rssTable(w func(string, ...any)) {
	w("## Peak RSS of one ADD\n\n")
	w("VmHWM of the exec'd process, read under ptrace at its exit stop (median of %d ADDs on an empty pool). For the chain it is ipam-delegated's own process, not its delegates'. ", r.opts.rssRuns)
	w("wait4's ru_maxrss (os/exec's ProcessState.SysUsage) is shown for reference but cannot go below the harness's own RSS")
	if s := r.rss[kStandalone]; s != nil {
		w(" (%d KiB here)", s.harnessRSS)
	}
	w(": Linux folds the pre-exec address space's high-water mark into it, and os/exec's vfork child shares the harness's; for the chain it also covers the delegates.\n\n")
	w("At the exit stop, the resident set splits into anonymous memory (heap, goroutine stacks, runtime data) and file-backed pages (the parts of the executable that were touched).\n\n")
	w("| subject | VmHWM (KiB) | ÷ host-local | at exit: anon / file (KiB) | wait4 Maxrss (KiB) |\n| --- | ---: | ---: | ---: | ---: |\n")
	hl := math.NaN()
	if h := r.rss[kHostLocal]; h != nil {
		hl = float64(h.medianHWM())
	}
	for _, s := range r.subs {
		x := r.rss[s.key]
		if x == nil {
			w("| %s | n/a | n/a | n/a | n/a |\n", s.label)
			continue
		}
		w("| %s | %d | %s | %d / %d | %d |\n", s.label, x.medianHWM(), fmtRatio(benchstat.Ratio(float64(x.medianHWM()), hl)),
			x.medianOf(func(s rssSample) int64 { return s.anon }), x.medianOf(func(s rssSample) int64 { return s.file }), x.medianMaxrss())
	}
	w("\n")
}

func (r *results) startupTable(w func(string, ...any)) {
	w("## Start-up cost\n\n")
	w("Sum of the `ms clock` of every `init` line of `GODEBUG=inittrace=1` (median over %d runs of VERSION, which does nothing but start and answer), the number of packages initialised, the wall time of VERSION without GODEBUG, and the five packages with the largest median init clock.\n\n", r.opts.initRuns)
	w("| executable | init clock (ms) | packages | VERSION wall (ms) | top 5 packages (ms) |\n| --- | ---: | ---: | ---: | --- |\n")
	for _, s := range r.startup {
		var top []string
		for _, p := range s.top(5) {
			top = append(top, fmt.Sprintf("%s %.3f", p.pkg, p.ms))
		}
		w("| %s | %.3f | %d | %s | %s |\n", s.label, benchstat.Median(s.initSum), benchstat.Median(s.initPkgs), num(benchstat.MS(benchstat.Median(s.version))), strings.Join(top, ", "))
	}
	w("\n")
}

// boundTable splits ADD ÷ floor into what start-up alone costs: the
// floor with every package of the binary linked (their package
// initialisation), then the binary itself answering VERSION (no work),
// then the ADD. The first two bound the third from below.
func (r *results) boundTable(w func(string, ...any)) {
	byLabel := map[string]float64{}
	for _, s := range r.startup {
		byLabel[s.label] = benchstat.MS(benchstat.Median(s.version))
	}
	floor := byLabel["exec floor"]
	w("## What bounds ADD ÷ exec floor\n\n")
	w("Each exec pays the Go runtime's start-up and the package initialisation of everything the binary links, before any personality runs. Medians of this run, each against the plain floor's VERSION (or ADD) wall time:\n\n")
	w("| step | ms | ÷ floor |\n| --- | ---: | ---: |\n")
	row := func(what string, ms, base float64) {
		w("| %s | %s | %s |\n", what, num(ms), fmtRatio(benchstat.Ratio(ms, base)))
	}
	row("exec floor, VERSION", floor, floor)
	row("floor + packages (links and initialises every package of the lean binary, then does what the floor does), VERSION", byLabel[labelFloorLinked], floor)
	row("ipam-da-pools, VERSION (start-up and the VERSION answer, no state touched)", byLabel["ipam-da-pools"], floor)
	if r.latency != nil {
		row("ipam-da-pools ADD, empty pool (against the floor's ADD)", r.medMS(0, "ADD", kStandalone), r.medMS(0, "ADD", kFloor))
	}
	w("\n")
}

// syscallTable lists the system calls of one ADD and one DEL.
func (r *results) syscallTable(w func(string, ...any)) {
	if r.syscalls == nil {
		return
	}
	w("## System calls of one ADD and one DEL\n\n")
	w("`strace -f -c` of one ADD and its DEL in a warm state directory (empty pool). \"state\" counts the calls on files (open, read, write, stat, link, rename, unlink, flock, fsync…, stdin and stdout included); the rest is process and runtime start-up.\n\n")
	w("| subject | ADD: all / state / fsync | DEL: all / state / fsync |\n| --- | --- | --- |\n")
	for _, s := range r.subs {
		m, ok := r.syscalls[s.key]
		if !ok {
			continue
		}
		cell := func(n syscallCount) string { return fmt.Sprintf("%d / %d / %d", n.total, n.files, n.fsyncs) }
		w("| %s | %s | %s |\n", s.label, cell(m["ADD"]), cell(m["DEL"]))
	}
	w("\n")
}

func (r *results) itersText() string {
	var parts []string
	for _, f := range r.opts.fills {
		parts = append(parts, fmt.Sprintf("%d", r.opts.itersFor(f)))
	}
	return strings.Join(parts, " / ") + " iterations"
}

func joinFills(fills []int) string {
	var s []string
	for _, f := range fills {
		s = append(s, fillLabel(f))
	}
	return strings.Join(s, ", ")
}

func mb(n int64) float64 { return float64(n) / 1e6 }

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
