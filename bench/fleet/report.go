package main

import (
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// report is what a run found.
type report struct {
	churnTime  time.Duration
	adds, dels []time.Duration
	codes      map[string]int
	dups       []string
	samples    []sample
	events     []event
	after      []snap // after phase 1; after phase 2 and the vanished host's gc
	beforeGC   snap
	vanish     vanished
	liveAtEnd  int
	compare    *sideBySide
}

// snap is the keys once a phase was drained.
type snap struct {
	label string
	came  int // attachments that came (and, but the vanished host's, went) so far
	hosts int // hosts whose state is left (the vanished one's buckets go with its gc)
	s     sample
}

type vanished struct {
	node                          string
	known, inFlight, deleting     []string
	plan, applied                 []string
	planOK, applyOK, refusedAlive bool
	leasesAfter                   int
	keysFreed                     int
}

// bound is the keys a drained fleet may hold: per host its node record
// and 16 fence buckets, plus the range set's exhaustion mark; a host gone
// for good and cleared keeps its record only.
func (s snap) bound(allHosts int) int { return allHosts + 16*s.hosts + 1 }

func (r *report) ok() bool {
	if len(r.dups) > 0 || len(r.after) != 2 || !r.vanish.planOK || !r.vanish.applyOK || !r.vanish.refusedAlive || r.vanish.leasesAfter != 0 {
		return false
	}
	all := r.after[0].hosts
	for _, a := range r.after {
		if a.s.keys != a.bound(all) || a.s.claims != 0 || a.s.index != 0 {
			return false
		}
	}
	return true
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }

func (r *report) markdown(o *options) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	title := "ipam-da-etcd as a fleet"
	if o.killMember {
		title += ", one etcd member killed and restarted mid-run"
	}
	w("# %s\n\n", title)
	w("`go run ./bench/fleet %s` (`make bench-fleet`): %d simulated hosts (own node names and machine IDs) × %d workers, "+
		"each ADD and DEL a process of its own as a runtime execs it, against a 3-member etcd cluster on loopback "+
		"(data on the machine's disk, every write fsync'd); %d live attachments per worker, so %d at a time; one /20 of 4,094 addresses. "+
		"Each worker ADDs a new container and DELs its oldest beyond that (one DEL in four sent twice, with prevResult then without, as containerd does; "+
		"a failed ADD DELed as a runtime does; a failed DEL sent again). "+
		"Churn %v in two phases (a quarter, then the rest), each drained (every live attachment DELeted) before the keys are counted. "+
		"Halfway through phase 2 one host is killed (its processes SIGKILLed, no DEL ever comes) and is cleared afterwards with "+
		"docs/etcd.md's procedure for a node gone for good. %d CPUs, shared by the plugins, etcd and this harness.\n\n",
		strings.Join(osArgs(), " "), o.hosts, o.workers, o.live, o.hosts*o.workers*o.live, o.churn, runtime.NumCPU())
	w("![keys, throughput and database size over time](%s.svg)\n\n", o.name)

	w("## Keys after the churn\n\n")
	w("| when | attachments that came and went | keys under the prefix | claims | index keys | node records | fence buckets | exhaustion marks | bound (hosts + 16 × hosts with state + 1) |\n")
	w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	rows := append([]snap{}, r.after...)
	if len(rows) == 2 {
		rows = []snap{rows[0], r.beforeGC, rows[1]}
	}
	all := 0
	if len(r.after) > 0 {
		all = r.after[0].hosts
	}
	for _, a := range rows {
		bound := "—"
		if a.label != r.beforeGC.label {
			bound = fmt.Sprint(a.bound(all))
		}
		w("| %s | %d | %d | %d | %d | %d | %d | %d | %s |\n", a.label, a.came, a.s.keys, a.s.claims, a.s.index, a.s.nodes, a.s.fences, a.s.marks, bound)
	}
	if len(r.after) == 2 {
		w("\nPhase 2 let %.1f× as many attachments come and go as phase 1; the keys left depend only on the hosts: "+
			"each keeps its node record and 16 fence buckets, and the vanished host, once cleared, its record alone. "+
			"The row before its gc holds its claims and index keys (one each per attachment it had).\n\n",
			float64(r.after[1].came)/float64(max(1, r.after[0].came)))
	}

	w("## Throughput and latency\n\n")
	secs := r.churnTime.Seconds()
	w("| op | completed | per second | p50 ms | p99 ms | max ms |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, x := range []struct {
		op string
		ds []time.Duration
	}{{"ADD", r.adds}, {"DEL", r.dels}} {
		if len(x.ds) == 0 {
			continue
		}
		w("| %s | %d | %.1f | %s | %s | %s |\n", x.op, len(x.ds), float64(len(x.ds))/secs, ms(benchstat.Median(x.ds)),
			ms(benchstat.Quantile(x.ds, 0.99)), ms(slices.Max(x.ds)))
	}
	w("\nOver %.0f s of churn (the drains included). Failures (each answered with a CNI error; a DEL is sent again until it succeeds): ", secs)
	if len(r.codes) == 0 {
		w("none.\n\n")
	} else {
		var fs []string
		for _, k := range slices.Sorted(maps.Keys(r.codes)) {
			fs = append(fs, fmt.Sprintf("%s × %d", k, r.codes[k]))
		}
		w("%s.\n\n", strings.Join(fs, ", "))
	}
	if len(r.samples) > 0 {
		last := r.samples[len(r.samples)-1]
		peak := slices.MaxFunc(r.samples, func(a, b sample) int { return int(a.dbSize - b.dbSize) })
		w("etcd's database: %.1f MB at the end (%.1f MB in use), at most %.1f MB; no compaction ran (the cluster has none configured), so it holds the whole history of the run.\n\n",
			float64(last.dbSize)/1e6, float64(last.dbInUse)/1e6, float64(peak.dbSize)/1e6)
	}

	w("## Invariants\n\n")
	w("- Addresses held by two live attachments at once (checked at every ADD's answer): **%d**.\n", len(r.dups))
	for _, d := range r.dups {
		w("  - %s\n", d)
	}
	v := r.vanish
	w("- Claims and index keys left after the drains: %s.\n", leftText(r.after))
	w("- The vanished host %s: %d attachments known live when it was killed, %d ADDs and %d DELs killed in flight. "+
		"`gc --etcd --node %s` (the plan) listed %d: %s. `--apply --dead-after 24h` %s. After 10 s, `--apply --dead-after 10s` released %d (%s), "+
		"%d keys in all; `leases --etcd` then lists %d claims in the whole fleet.\n",
		v.node, len(v.known), len(v.inFlight), len(v.deleting), v.node, len(v.plan), okText(v.planOK, "exactly its attachments", "NOT its attachments"),
		okText(v.refusedAlive, "was refused (node seen alive)", "was NOT refused"), len(v.applied), okText(v.applyOK, "the plan's", "NOT the plan's"),
		v.keysFreed, v.leasesAfter)
	w("\n## Timeline\n\n")
	for _, e := range r.events {
		w("- %.1f s: %s\n", e.at.Seconds(), e.what)
	}
	if r.compare != nil {
		w("\n%s", r.compare.markdown())
	}
	return b.String()
}

func leftText(after []snap) string {
	var parts []string
	for _, a := range after {
		parts = append(parts, fmt.Sprintf("%s %d claims, %d index keys", a.label, a.s.claims, a.s.index))
	}
	return strings.Join(parts, "; ")
}

func okText(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return "**" + no + "**"
}

// svg plots, against time, the keys under the prefix and the claims among
// them, ADDs and DELs per second, and etcd's database size, with the
// run's events as vertical lines.
func (r *report) svg() string {
	const (
		width, panelH, left, right, top, gap = 900, 170, 80, 40, 40, 50
		plotW                                = width - left - right
	)
	height := top + 3*panelH + 2*gap + 50 + 14*len(r.events)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">ipam-da-etcd fleet: keys, throughput and etcd database over time</text>`+"\n", left)
	if len(r.samples) == 0 {
		b.WriteString("</svg>\n")
		return b.String()
	}
	tMax := r.samples[len(r.samples)-1].at.Seconds()
	if len(r.events) > 0 {
		tMax = math.Max(tMax, r.events[len(r.events)-1].at.Seconds())
	}
	x := func(t float64) float64 { return left + t/tMax*plotW }
	type line struct {
		label, color string
		v            func(s sample) float64
	}
	panel := func(i int, title, unit string, lines []line) {
		y0 := float64(top + i*(panelH+gap))
		hi := 0.0
		for _, s := range r.samples {
			for _, l := range lines {
				hi = math.Max(hi, l.v(s))
			}
		}
		hi = niceCeil(hi)
		y := func(v float64) float64 { return y0 + panelH - v/hi*panelH }
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-size="13">%s</text>`+"\n", left, y0-8, title)
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, y0, plotW, panelH)
		for k := 0; k <= 4; k++ {
			v := hi * float64(k) / 4
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", left, left+plotW, y(v), y(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, short(v))
		}
		fmt.Fprintf(&b, `<text x="12" y="%.0f" transform="rotate(-90 12 %.0f)" text-anchor="middle">%s</text>`+"\n", y0+panelH/2, y0+panelH/2, unit)
		for _, e := range r.events {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#bbb" stroke-dasharray="3,3"/>`+"\n", x(e.at.Seconds()), x(e.at.Seconds()), y0, y0+panelH)
		}
		for li, l := range lines {
			var pts []string
			for _, s := range r.samples {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.at.Seconds()), y(l.v(s))))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`+"\n", l.color, strings.Join(pts, " "))
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" fill="%s" text-anchor="end">%s</text>`+"\n", left+plotW-6, y0+16+float64(li)*15, l.color, l.label)
		}
	}
	rate := func(n func(s sample) int) func(s sample) float64 {
		return func(s sample) float64 {
			if s.intervalS == 0 {
				return 0
			}
			return float64(n(s)) / s.intervalS
		}
	}
	panel(0, "keys under the prefix", "keys", []line{
		{"all keys", "#1f77b4", func(s sample) float64 { return float64(s.keys) }},
		{"claims (live addresses)", "#2ca02c", func(s sample) float64 { return float64(s.claims) }},
		{"fence buckets", "#9467bd", func(s sample) float64 { return float64(s.fences) }},
	})
	panel(1, "completed commands per second", "per second", []line{
		{"ADD", "#1f77b4", rate(func(s sample) int { return s.addsSince })},
		{"DEL", "#d62728", rate(func(s sample) int { return s.delsSince })},
	})
	panel(2, "etcd database (largest member)", "MB", []line{
		{"db size", "#ff7f0e", func(s sample) float64 { return float64(s.dbSize) / 1e6 }},
		{"in use", "#8c564b", func(s sample) float64 { return float64(s.dbInUse) / 1e6 }},
	})
	yAxis := top + 3*panelH + 2*gap
	for k := 0; k <= 6; k++ {
		t := tMax * float64(k) / 6
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f s</text>`+"\n", x(t), yAxis+16, t)
	}
	for i, e := range r.events {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" fill="#666">%d</text>`+"\n", x(e.at.Seconds())+3, top+12, i+1)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" fill="#666">%d: %.0f s, %s</text>`+"\n", left, yAxis+36+14*i, i+1, e.at.Seconds(), escape(e.what))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.1fk", v/1000)
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
