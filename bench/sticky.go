package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// The sticky scenario: ipam-da-pools standalone with ipam.sticky off and
// on, side by side in one run (taking turns, each on its own state
// directory), each iteration an ADD of a fresh container followed by its
// DEL. "recreate" cycles over stickyKeys keys, so after the first round
// every ADD gives a held address to a new container ID (a StatefulSet's
// pods coming back); "new key" gives every ADD a key never seen (an
// allocation plus a hold record; the holds pile up, one per iteration).

const stickyKeys = 16

// stickyResult is the scenario's measurements, by "<variant> <op>".
type stickyResult struct {
	n       int
	samples sideBySide
}

var stickyVariants = []string{"off", "recreate", "new key"}

func measureSticky(o *options, r *results) error {
	res := &stickyResult{n: o.n, samples: sideBySide{}}
	r.sticky = res
	lean := filepath.Join(r.bins.cniDir, "ipam-da-pools")
	sub := func(variant string) subject {
		ipam := rangesIPAM("ipam-da-pools")
		if variant != "off" {
			ipam["sticky"] = map[string]any{"by": []string{"arg"}, "holdFor": "30m"}
		}
		return subject{key: variant, label: variant, path: lean, cniPath: r.bins.cniDir, ipam: ipam, stateDir: networkDir}
	}
	one := func(variant string, i int, tag string) ([2]outcome, error) {
		s := sub(variant)
		dataDir := filepath.Join(o.tmp, "sticky-"+strings.ReplaceAll(variant, " ", "-"))
		cid := containerID(fmt.Sprintf("%s-%d-%s", tag, i, s.key))
		var env []string
		switch variant {
		case "recreate":
			env = []string{"CNI_ARGS=" + alloc.ArgStickyKey + fmt.Sprintf("=bench/set-%d", i%stickyKeys)}
		case "new key":
			env = []string{"CNI_ARGS=" + alloc.ArgStickyKey + fmt.Sprintf("=bench/%s-%d", tag, i)}
		}
		add := s.call("ADD", cid, dataDir, nil)
		add.env = env
		a, err := mustRun(add)
		if err != nil {
			return [2]outcome{}, err
		}
		del := s.call("DEL", cid, dataDir, a.stdout)
		del.env = env
		d, err := mustRun(del)
		return [2]outcome{a, d}, err
	}
	o.logf("sticky: latency, n=%d, sticky off and on alternating", o.n)
	return alternate(stickyVariants, max(1, o.warmup)+stickyKeys, o.n, res.samples, one)
}

// ratio is variant's median of op over sticky off's.
func (s *stickyResult) ratio(variant, op string) float64 { return s.samples.ratio(variant, "off", op) }

func (s *stickyResult) markdown(fsType string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## ipam-da-pools with sticky addresses\n\n")
	w("ipam-da-pools standalone with `ipam.sticky` off and on (`by: [arg]`, a key in CNI_ARGS), taking turns in one run, each on its own state directory on %s; each iteration ADDs a fresh container ID and DELs it (prevResult = the ADD's result). *recreate*: %d keys in turn, so every ADD gives a held address to a new container ID; *new key*: a key never seen (allocation plus a hold record; holds pile up). Median / p99 in ms, n = %d.\n\n", fsType, stickyKeys, s.n)
	w("| op | sticky off | recreate | new key | recreate ÷ off | new key ÷ off | target ADD ≤ 1.05× |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, op := range latencyOps {
		target := ""
		if op == "ADD" {
			target = metCell(s.ratio("recreate", op) <= 1.05 && s.ratio("new key", op) <= 1.05)
		}
		w("| %s | %s | %s | %s | %s | %s | %s |\n", op, s.samples.cell("off", op), s.samples.cell("recreate", op), s.samples.cell("new key", op), fmtRatio(s.ratio("recreate", op)), fmtRatio(s.ratio("new key", op)), target)
	}
	w("\n")
	return b.String()
}
