package ops

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/containernetworking/cni/pkg/invoke"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Validator checks configuration files the way the plugins will parse
// them, without touching state or host.
type Validator struct {
	// Lookup finds a personality of this binary by name (the flavour's
	// registry).
	Lookup func(string) (plugin.Personality, bool)
	// CNIPath is where delegates must be found, in order.
	CNIPath []string
}

// Files validates each file and returns every problem found, in file
// order. A file that is fine contributes nothing.
func (v Validator) Files(files []string) []Problem {
	check := v.checker()
	var out []Problem
	for _, f := range files {
		out = append(out, check(LoadPlugins([]string{f}))...)
	}
	return out
}

// Data validates one configuration file given by its content, as Files
// validates a file: name (its base name decides, as libcni's, whether it
// is a list) names it in every Problem. k8s-install checks exactly the
// bytes it is about to write, never a path it would read a second time
// (the ConfigMap may be swapped in between), and its container's root
// file system is read-only, so there is no temporary file to write either.
func (v Validator) Data(name string, data []byte) []Problem {
	return v.checker()(parsePlugins(name, data))
}

// checker validates one file's plugins after the problems parsing it
// found, pools shared with the checker's other files; whatever is not a
// warning is marked a problem, so each says which.
func (v Validator) checker() func([]PluginConf, []Problem) []Problem {
	pools := map[string]definition{}
	return func(plugins []PluginConf, out []Problem) []Problem {
		for _, p := range plugins {
			out = append(out, v.plugin(p, pools)...)
		}
		// The personalities' checks and Describe find some problems twice.
		seen := map[string]bool{}
		var uniq []Problem
		for _, pr := range out {
			if key := pr.Path + "\x00" + pr.Msg; !seen[key] {
				seen[key] = true
				pr.Severity = cmp.Or(pr.Severity, SeverityProblem)
				uniq = append(uniq, pr)
			}
		}
		return uniq
	}
}

// plugin validates one plugin's configuration.
func (v Validator) plugin(p PluginConf, pools map[string]definition) []Problem {
	var out []Problem
	env, err := netconf.Parse(p.Raw)
	if err != nil {
		return []Problem{p.problem(err)}
	}
	names, delegates := p.ipam()
	for i, d := range delegates {
		// An entry that is no name is the personality's own Validate's.
		if name, isName := d.(string); isName && !v.resolvable(name) {
			out = append(out, Problem{File: p.File, Path: p.field(fmt.Sprintf("ipam.delegates[%d]", i)), Value: name,
				Msg: "delegate not found in CNI path " + strings.Join(v.CNIPath, ":")})
		}
	}
	for _, name := range names {
		if per, ok := v.Lookup(name); ok && per.Validate != nil {
			if err := per.Validate(env); err != nil {
				out = append(out, p.problem(err))
			}
		}
	}
	if slices.Contains(names, dsselect.ArgsName) {
		// A config that does not parse was reported above.
		risks, _ := dsselect.QuotaRisks(env)
		for _, r := range risks {
			// A quota an author can get around still does what it says
			// for everyone else: a warning, which --strict makes fail.
			out = append(out, Problem{File: p.File, Path: p.field(r.Field), Value: r.Value, Msg: r.Msg, Severity: SeverityWarning})
		}
	}
	n, ours, err := Describe(p, "")
	switch {
	case !ours:
		return out
	case err != nil:
		return append(out, p.problem(err))
	}
	if err := overlaps(n); err != nil {
		out = append(out, p.problem(err))
	}
	for _, pd := range n.Pools {
		// A shared pool is the same pool by its state directory: the same
		// name in another dataDir is another pool.
		rs := pd.Set.String()
		first, ok := pools[pd.Dir]
		if !ok {
			pools[pd.Dir] = definition{ranges: rs, file: p.File, path: p.field("ipam")}
		} else if first.ranges != rs {
			out = append(out, Problem{File: p.File, Path: p.field("ipam"), Value: pd.Name + "=" + rs,
				Msg: fmt.Sprintf("pool %s is defined differently in %s; the networks sharing it would disagree on its ranges", pd.Name, first)})
		}
	}
	return out
}

// overlaps rejects a network whose range sets and pools share an
// address: two state directories would hand the same address out twice.
func overlaps(n Network) error {
	sets := slices.Clone(n.RangeSets)
	for _, pd := range n.Pools {
		sets = append(sets, pd.Set)
	}
	return addrspace.CheckDisjoint(sets, func(set, idx int) string {
		if set < len(n.RangeSets) {
			return fmt.Sprintf("ipam.ranges[%d][%d]", set, idx)
		}
		return fmt.Sprintf("%s[%d]", n.Pools[set-len(n.RangeSets)].Field, idx)
	})
}

// resolvable reports whether name is an executable file in the CNI path
// as ipam-delegated looks delegates up (delegated.Resolve): the first
// regular file of that name, which the runtime then runs or fails to.
func (v Validator) resolvable(name string) bool {
	path, err := invoke.FindInPath(name, v.CNIPath)
	if err != nil {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&0o111 != 0
}

// problem turns a plugin's typed error into a Problem: its details are
// "field=value" or "field", the field relative to the plugin.
func (p PluginConf) problem(err error) Problem {
	e := cnierr.As(err)
	path, value := "", e.Details
	if k, val, ok := strings.Cut(e.Details, "="); ok && !strings.ContainsAny(k, " \t") {
		path, value = k, val
	} else if !strings.ContainsAny(e.Details, " \t") {
		path, value = e.Details, ""
	}
	return Problem{File: p.File, Path: p.field(path), Value: trimmed(value), Msg: e.Msg}
}
