package dsselect

import (
	"path"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// matches: every match key the rule has holds for a. A value the
// attachment does not present never matches, not even "*": a rule on
// namespace means "attachments in a namespace like this".
func (r rule) matches(a attachment) bool {
	return matchValue(r.namespace, a.namespace) && matchValue(r.podName, a.podName) &&
		matchValue(r.ifname, a.ifname) && matchMap(r.args, a.args) &&
		matchMap(r.labels, a.labels) && matchMap(r.annotations, a.annotations)
}

func matchValue(pattern, value string) bool {
	if pattern == "" {
		return true
	}
	return value != "" && glob(pattern, value)
}

func matchMap(patterns, values map[string]string) bool {
	for k, pattern := range patterns {
		v, ok := values[k]
		if !ok || !glob(pattern, v) {
			return false
		}
	}
	return true
}

// glob is path.Match; patterns were checked when the config was parsed.
func glob(pattern, value string) bool {
	ok, _ := path.Match(pattern, value)
	return ok
}

// choose is ADD's and CHECK's answer: the first matching rule's pools (or
// the attachment's own choice, where that rule allows it), else the
// defaults; then the cniplugins.io/ip addresses as requested-ip; and the
// sticky key when that rule is sticky.
func (c *argsConfig) choose(a attachment) (pool.Selection, error) {
	r := c.match(a)
	pools, err := c.matchPools(r, a)
	if err != nil {
		return pool.Selection{}, err
	}
	if len(a.requestedIPs) > 0 {
		defs, err := pool.NewDefinitions("ipam.poolDefinitions", c.definitions)
		if err != nil {
			return pool.Selection{}, err
		}
		if err := alloc.RequestPools(pools, defs, a.requestedIPs, annotationField(annotationIP)); err != nil {
			return pool.Selection{}, err
		}
	}
	q, err := c.quotaOf(r, a)
	if err != nil {
		return pool.Selection{}, err
	}
	return pool.Selection{Pools: pools, Sticky: r.stickyOf(a), Quota: q}, nil
}

// match is the first rule matching a, nil when none does.
func (c *argsConfig) match(a attachment) *rule {
	for i := range c.rules {
		if c.rules[i].matches(a) {
			return &c.rules[i]
		}
	}
	return nil
}

// matchPools is the pools of rule r (nil: the defaults) for a: the
// attachment's own choice, if it makes one, only within r's podChoice.
// This is the security boundary: whoever creates a pod writes its
// annotations, so an annotation must never reach a pool the operator's
// rule did not open to it.
func (c *argsConfig) matchPools(r *rule, a attachment) ([]pool.Pool, error) {
	if r == nil {
		if c.defaults == nil {
			return nil, cnierr.New(cnierr.CodeNoPoolSelected, "no rule selects a pool for this attachment", "%s", a.presented())
		}
		r = &rule{field: "ipam.defaultPools", pools: c.defaults}
	}
	if len(a.choice) == 0 {
		return slices.Clone(r.pools), nil
	}
	out := make([]pool.Pool, 0, len(a.choice))
	for _, ch := range a.choice {
		if !slices.Contains(r.podChoice, ch.name) {
			return nil, cnierr.New(cnierr.CodePoolNotAllowed, "pool not allowed for this attachment",
				"pool=%q asked by %s; matched %s, whose podChoice is [%s]", ch.name, ch.from, r.field, strings.Join(r.podChoice, " "))
		}
		out = append(out, c.named(ch.name))
	}
	return out, nil
}

// stickyOf is the key a sticky rule gives a, with its source:
// "<namespace>/<podName>" (a StatefulSet pod's name is stable, and unique
// in its namespace); for an attachment that presents no namespace or no
// pod name, the annotation cniplugins.io/sticky-key if it has one; else
// nil (not sticky). The pod's author writes the annotation, so it never
// replaces a namespace and pod name the runtime sent: in Kubernetes the
// key is not the pod's choice, and an annotation key is scoped to the
// namespace (alloc.ScopeStickyKey). A "kubevirt" rule gives the VM's key
// (alloc.KubevirtKey) alone. The source goes with the key because the
// allocator honours a migration name for a VM's key only, and an
// annotation key can look like one. Nil (no rule matched: the defaults)
// or a rule without sticky: nil.
func (r *rule) stickyOf(a attachment) *pool.Sticky {
	switch {
	case r == nil || r.sticky == "":
		return nil
	case r.sticky == alloc.StickyByKubevirt:
		if k := alloc.KubevirtKey(a.namespace, a.annotations); k != "" {
			return &pool.Sticky{Key: k, By: alloc.StickyByKubevirt}
		}
		return nil
	case a.namespace != "" && a.podName != "":
		return &pool.Sticky{Key: a.namespace + "/" + a.podName, By: alloc.StickyByPod}
	default:
		if k := a.annotations[alloc.AnnotationStickyKey]; k != "" {
			return &pool.Sticky{Key: alloc.ScopeStickyKey(a.namespace, k), By: alloc.StickyByAnnotation}
		}
		return nil
	}
}
