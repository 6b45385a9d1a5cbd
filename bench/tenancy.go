package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// The tenancy scenario: the chain ipam-delegated → ipam-ds-args →
// ipam-da-pools whose rule's pool is plain, has a quota per tenant
// (CNI_ARGS TEAM), heads an overflow chain of three pools (the first with
// room, as it is for most ADDs), or both, side by side in one run (taking
// turns, each on its own data directory); each iteration an ADD of a
// fresh container and its DEL. Every variant defines the chain's other
// pools in poolDefinitions, as a cluster whose tenants overflow into
// shared pools does whether this rule uses them or not, so that "plain"
// is the same configuration without the quota and the chain; "bare" has
// no definitions at all, to show what reading them costs.

// tenancyResult is the scenario's measurements, by "<variant> <op>".
type tenancyResult struct {
	n       int
	samples sideBySide
}

// tenancyVariants: "tenancy" has both the quota and the chain, the target's
// subject; "quota" and "overflow" have one each, to tell their costs apart;
// "plain" neither; "bare" not even the shared pools' definitions.
var tenancyVariants = []string{"bare", "plain", "quota", "overflow", "tenancy"}

// tenancyArgs are both variants' CNI_ARGS: the tenant of the quota.
const tenancyArgs = "CNI_ARGS=IgnoreUnknown=1;TEAM=bench"

// tenancyIPAM is variant's ipam section (without dataDir).
func tenancyIPAM(variant string) map[string]any {
	first := map[string]string{"name": poolName, "subnet": subnet}
	rule := map[string]any{"pools": []map[string]string{first}}
	ipam := map[string]any{"type": "ipam-delegated", "delegates": []string{"ipam-ds-args", "ipam-da-pools"}}
	if variant == "tenancy" || variant == "quota" {
		rule["quota"] = map[string]any{"per": "arg:TEAM", "max": 1 << 20}
	}
	ipam["rules"] = []map[string]any{rule}
	if variant == "bare" {
		return ipam
	}
	spill1 := map[string]any{"ranges": []map[string]string{{"subnet": "10.11.0.0/16"}}}
	ipam["poolDefinitions"] = map[string]any{"spill-1": spill1, "spill-2": []map[string]string{{"subnet": "10.12.0.0/16"}}}
	if variant == "tenancy" || variant == "overflow" {
		first["overflow"] = "spill-1"
		spill1["overflow"] = "spill-2"
	}
	return ipam
}

// tenancyRoundsPerN: the scenario runs this many times -n rounds. What it
// measures is a few per cent of an ADD, about the sampling error of one
// median over n rounds of a 2 ms exec; four times the rounds halve that
// error, and five variants of two short operations keep it to seconds.
const tenancyRoundsPerN = 4

func measureTenancy(o *options, r *results) error {
	n := tenancyRoundsPerN * o.n
	res := &tenancyResult{n: n, samples: sideBySide{}}
	r.tenancy = res
	sub := func(variant string) subject {
		return subject{key: variant, label: variant, path: filepath.Join(r.bins.cniDir, "ipam-delegated"), cniPath: r.bins.cniDir, ipam: tenancyIPAM(variant), stateDir: poolDir}
	}
	one := func(variant string, i int, tag string) ([2]outcome, error) {
		s := sub(variant)
		dataDir := filepath.Join(o.tmp, "tenancy-"+variant)
		cid := containerID(fmt.Sprintf("%s-%d-%s", tag, i, s.key))
		add := s.call("ADD", cid, dataDir, nil)
		add.env = []string{tenancyArgs}
		a, err := mustRun(add)
		if err != nil {
			return [2]outcome{}, err
		}
		del := s.call("DEL", cid, dataDir, a.stdout)
		del.env = []string{tenancyArgs}
		d, err := mustRun(del)
		return [2]outcome{a, d}, err
	}
	o.logf("tenancy: latency, n=%d, plain and with a quota and an overflow chain alternating", n)
	return alternate(tenancyVariants, max(1, o.warmup), n, res.samples, one)
}

// ratio is variant's median of op over the plain pool's.
func (s *tenancyResult) ratio(variant, op string) float64 {
	return s.samples.ratio(variant, "plain", op)
}

func (s *tenancyResult) markdown(fsType string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Tenancy: a quota and an overflow chain\n\n")
	w("The chain `ipam-delegated` → `ipam-ds-args` → `ipam-da-pools`, its rule's pool plain; with a quota per tenant (CNI_ARGS `TEAM`); at the head of an overflow chain of three pools (the first with room); and with both (the target's subject), taking turns in one run, each on its own data directory on %s. All four define the chain's other two pools in `poolDefinitions` (a cluster whose tenants overflow into shared pools defines them whether a rule uses them or not), so plain is the same configuration without the quota and the chain; bare has no definitions at all. Each iteration ADDs a fresh container ID and DELs it (prevResult = the ADD's result). Median / p99 in ms, n = %d.\n\n", fsType, s.n)
	w("| op | bare | plain | quota | overflow chain | both | quota ÷ plain | chain ÷ plain | both ÷ plain | both ÷ bare | target ADD ≤ 1.05× plain |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, op := range latencyOps {
		target := ""
		if op == "ADD" {
			target = metCell(s.ratio("tenancy", op) <= 1.05)
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, s.samples.cell("bare", op), s.samples.cell("plain", op), s.samples.cell("quota", op), s.samples.cell("overflow", op), s.samples.cell("tenancy", op),
			fmtRatio(s.ratio("quota", op)), fmtRatio(s.ratio("overflow", op)), fmtRatio(s.ratio("tenancy", op)), fmtRatio(s.samples.ratio("tenancy", "bare", op)), target)
	}
	w("\n")
	return b.String()
}
