package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// svg draws ADD median latency against pool fill: one line per subject,
// fill levels evenly spaced on x, log-scale y.
func (r *results) svg() string {
	const (
		width, height            = 840, 460
		left, right, top, bottom = 80, 250, 50, 70
		plotW, plotH             = width - left - right, height - top - bottom
	)
	type series struct {
		key, label, color, dash string
	}
	lines := []series{
		{kStandalone, "ipam-da-pools (standalone)", "#1f77b4", ""},
		{kChain, "chain (ipam-delegated)", "#2ca02c", ""},
		{kHostLocal, "host-local (upstream)", "#d62728", ""},
		{kFloor, "exec floor", "#7f7f7f", "6,4"},
	}
	fills := r.opts.fills
	if r.latency != nil {
		fills = r.latency.fills
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range lines {
		for _, f := range fills {
			if v := r.medMS(f, "ADD", s.key); v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	x := func(i int) float64 {
		if len(fills) == 1 {
			return left + plotW/2
		}
		return left + 30 + float64(i)*(plotW-60)/float64(len(fills)-1)
	}
	y := func(v float64) float64 {
		return top + plotH - (math.Log10(v)-dlo)/(dhi-dlo)*plotH
	}

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%d" y="24" font-size="16" font-weight="bold">ADD median latency vs pool fill (one exec per ADD)</text>`+"\n", left)
	// Horizontal grid and y tick labels: 1, 2, 5 per decade.
	for d := dlo; d <= dhi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > dhi+1e-9 {
				continue
			}
			yy := y(v)
			stroke := "#cccccc"
			if m == 1 {
				stroke = "#999999"
			}
			w(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" />`+"\n", left, yy, left+plotW, yy, stroke)
			w(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, yy, tick(v))
		}
	}
	// Axes.
	w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, top+plotH)
	w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	for i, f := range fills {
		w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>`+"\n", x(i), top+plotH, x(i), top+plotH+5)
		w(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(i), top+plotH+20, fillLabel(f))
	}
	w(`<text x="%d" y="%d" text-anchor="middle">allocations already in the /16 (pool fill)</text>`+"\n", left+plotW/2, height-20)
	w(`<text transform="translate(22 %d) rotate(-90)" text-anchor="middle">ADD median latency (ms, log scale)</text>`+"\n", top+plotH/2)
	// Lines and points.
	type label struct {
		y           float64
		text, color string
	}
	labels := make([][]label, len(fills))
	for _, s := range lines {
		var pts []string
		for i, f := range fills {
			if v := r.medMS(f, "ADD", s.key); v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
				labels[i] = append(labels[i], label{y(v), num(v), s.color})
			}
		}
		if len(pts) == 0 {
			continue
		}
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		w(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		for _, p := range pts {
			cx, cy, _ := strings.Cut(p, ",")
			w(`<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", cx, cy, s.color)
		}
	}
	// Value labels right of each point, pushed apart where lines meet.
	for i, ls := range labels {
		slices.SortFunc(ls, func(a, b label) int { return cmp.Compare(a.y, b.y) })
		prev := math.Inf(-1)
		for _, l := range ls {
			yy := math.Max(l.y+4, prev+11)
			prev = yy
			w(`<text x="%.1f" y="%.1f" font-size="10" fill="%s" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`+"\n", x(i)+8, yy, l.color, l.text)
		}
	}
	// Legend.
	lx, ly := left+plotW+20, top+10
	for i, s := range lines {
		yy := ly + i*22
		label := s.label
		if !r.available(s.key) {
			label += " (n/a)"
		}
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, yy, lx+24, yy, s.color, dash)
		w(`<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", lx+30, yy, label)
	}
	w(`<text x="%d" y="%d" font-size="10" fill="#555">%s, %s CPUs, %s</text>`+"\n", left, height-4, r.machine.commit, r.machine.nproc, r.machine.date)
	w("</svg>\n")
	return b.String()
}

// tick labels a log-axis value without trailing zeros.
func tick(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g", math.Round(v))
	}
	return fmt.Sprintf("%g", v)
}
