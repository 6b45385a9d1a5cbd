package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// The tenancy scenario: the chain ipam-delegated → ipam-ds-static →
// ipam-da-pools with its pool plain, and with the pool at the head of an
// overflow chain of three pools (the first with room, as it is for most
// ADDs), side by side in one run (taking turns, each on its own data
// directory); each iteration an ADD of a fresh container and its DEL.
// The chain costs an ADD the locks of the chain's pools and the look for
// the attachment in each of them.

// tenancyResult is the scenario's measurements, by "<variant> <op>".
type tenancyResult struct {
	n       int
	samples map[string][]time.Duration
}

var tenancyVariants = []string{"plain", "overflow"}

func measureTenancy(o *options, r *results) error {
	res := &tenancyResult{n: o.n, samples: map[string][]time.Duration{}}
	r.tenancy = res
	sub := func(variant string) subject {
		first := map[string]string{"name": poolName, "subnet": subnet}
		ipam := map[string]any{"type": "ipam-delegated", "delegates": []string{"ipam-ds-static", "ipam-da-pools"}}
		if variant == "overflow" {
			first["overflow"] = "spill-1"
			ipam["poolDefinitions"] = map[string]any{
				"spill-1": map[string]any{"ranges": []map[string]string{{"subnet": "10.11.0.0/16"}}, "overflow": "spill-2"},
				"spill-2": []map[string]string{{"subnet": "10.12.0.0/16"}},
			}
		}
		ipam["pools"] = []map[string]string{first}
		return subject{key: variant, label: variant, path: filepath.Join(r.bins.cniDir, "ipam-delegated"), cniPath: r.bins.cniDir, ipam: ipam, stateDir: poolDir}
	}
	one := func(variant string, i int, tag string) ([2]outcome, error) {
		s := sub(variant)
		dataDir := filepath.Join(o.tmp, "tenancy-"+variant)
		cid := containerID(fmt.Sprintf("%s-%d-%s", tag, i, s.key))
		a, err := mustRun(s.call("ADD", cid, dataDir, nil))
		if err != nil {
			return [2]outcome{}, err
		}
		d, err := mustRun(s.call("DEL", cid, dataDir, a.stdout))
		return [2]outcome{a, d}, err
	}
	for w := 0; w < max(1, o.warmup); w++ {
		for _, v := range tenancyVariants {
			if _, err := one(v, w, "tenancy-warm"); err != nil {
				return err
			}
		}
	}
	o.logf("tenancy: latency, n=%d, plain and overflow alternating", o.n)
	for i := 0; i < o.n; i++ {
		for j := range tenancyVariants {
			v := tenancyVariants[(i+j)%len(tenancyVariants)]
			ds, err := one(v, i, "tenancy-lat")
			if err != nil {
				return err
			}
			for k, op := range latencyOps {
				res.samples[v+" "+op] = append(res.samples[v+" "+op], ds[k].dur)
			}
		}
	}
	return nil
}

// ratio is the overflow chain's median of op over the plain pool's.
func (s *tenancyResult) ratio(op string) float64 {
	on, off := summarise(s.samples["overflow "+op]), summarise(s.samples["plain "+op])
	return benchstat.Ratio(benchstat.MS(on.median), benchstat.MS(off.median))
}

func (s *tenancyResult) markdown(fsType string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Tenancy: an overflow chain\n\n")
	w("The chain `ipam-delegated` → `ipam-ds-static` → `ipam-da-pools`, its pool plain and at the head of an overflow chain of three pools (the first with room), taking turns in one run, each on its own data directory on %s; each iteration ADDs a fresh container ID and DELs it (prevResult = the ADD's result). Median / p99 in ms, n = %d.\n\n", fsType, s.n)
	w("| op | plain | overflow chain | ÷ plain | target ADD ≤ 1.05× |\n| --- | ---: | ---: | ---: | --- |\n")
	for _, op := range latencyOps {
		cell := func(v string) string {
			m := summarise(s.samples[v+" "+op])
			return num(benchstat.MS(m.median)) + " / " + num(benchstat.MS(m.p99))
		}
		verdict := ""
		if op == "ADD" {
			verdict = "**met**"
			if !(s.ratio(op) <= 1.05) {
				verdict = "**not met**"
			}
		}
		w("| %s | %s | %s | %s | %s |\n", op, cell("plain"), cell("overflow"), fmtRatio(s.ratio(op)), verdict)
	}
	w("\n")
	return b.String()
}
