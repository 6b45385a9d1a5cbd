package dsselect

import (
	"maps"
	"slices"

	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// ArgsName is ipam-ds-args' personality name.
const ArgsName = "ipam-ds-args"

// Args returns ipam-ds-args: it picks pools by matching ordered rules
// against what the runtime passed (CNI_ARGS, args.cni, the pod-annotations
// capability, CNI_IFNAME), with no call to anything outside the process.
func Args() plugin.Personality {
	return plugin.Personality{
		Name:     ArgsName,
		Summary:  "selects pools by rules on CNI_ARGS, args.cni labels and pod annotations",
		Funcs:    selectorFuncs(argsAttached, argsEvery, nil),
		ArgKeys:  argsArgKeys,
		Validate: parsesWith(parseArgsConfig),
	}
}

// argsArgKeys is every CNI_ARGS key ipam-ds-args' config refers to, each
// once: the namespace and pod name keys, the keys its rules' quotas and
// matches read, and the allocator's (chainArgKeys).
func argsArgKeys(conf *netconf.Envelope) ([]string, error) {
	c, err := parseArgsConfig(conf)
	if err != nil {
		return nil, err
	}
	all := []string{netconf.ArgPodNamespace, netconf.ArgNomadNamespace, netconf.ArgPodName}
	for _, r := range c.rules {
		if k, ok := r.quota.argKey(); ok {
			all = append(all, k)
		}
		all = append(all, slices.Sorted(maps.Keys(r.args))...)
	}
	var keys []string
	for _, k := range append(all, chainArgKeys()...) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// argsAttached serves ADD and CHECK: the pools this attachment's inputs
// select, and its sticky key when the matching rule is sticky.
func argsAttached(req *plugin.Request) (pool.Selection, error) {
	c, err := parseArgsConfig(req.Conf)
	if err != nil {
		return pool.Selection{}, err
	}
	a, err := normalise(req.Args.IfName, req.CNIArgs, req.Conf, c.namespaceFrom)
	if err != nil {
		return pool.Selection{}, err
	}
	return c.choose(a)
}

// argsEvery serves DEL, GC and STATUS: every pool any rule or default
// names. A runtime's DEL may carry fewer args or annotations than its ADD
// did, so matching again could miss the pool that holds the address; GC
// and STATUS concern the whole network and have no attachment at all.
// STATUS also names the sets an ADD could be given (c.sets), so that one
// tenant's full pool fails only that tenant's ADDs, not the network.
// DEL still carries the sticky key when what it presents matches a sticky
// rule (best effort: the allocator finds the attachment's reservations by
// container ID whatever DEL carries, and input that ADD would have refused
// never fails a DEL).
func argsEvery(req *plugin.Request) (pool.Selection, error) {
	c, err := parseArgsConfig(req.Conf)
	if err != nil {
		return pool.Selection{}, err
	}
	ch := pool.Selection{Pools: slices.Clone(c.pools)}
	if req.Command == plugin.CmdStatus {
		ch.Choices = c.sets()
	}
	if req.Command == plugin.CmdDel {
		if a, err := normalise(req.Args.IfName, req.CNIArgs, req.Conf, c.namespaceFrom); err == nil {
			ch.Sticky = c.match(a).stickyOf(a)
		}
	}
	return ch, nil
}
