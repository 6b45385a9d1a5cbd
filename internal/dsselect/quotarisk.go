package dsselect

import (
	"fmt"
	"strings"

	"github.com/cniplugins/cniplugins/internal/netconf"
)

// QuotaRisk is a quota of conf's ipam-ds-args rules that a pod's author
// can get around: what `cniplugins validate` reports. Field is the
// rule's quota (or its per), Value what the author uses.
type QuotaRisk struct {
	Field, Value, Msg string
}

// QuotaRisks lists, in rule order, the rules whose tenant a pod's author
// chooses (an arg: or annotation: tenant not vouched for: each value the
// author writes is a quota of its own, in its namespace), and the rules
// whose quota an author escapes by making its pod match another rule (or
// the defaults) that has no quota or counts another tenant. The quota
// engine closes every other way around (tenantQuota): these are the config's
// to close.
func QuotaRisks(conf *netconf.Envelope) ([]QuotaRisk, error) {
	c, err := parseArgsConfig(conf)
	if err != nil {
		return nil, err
	}
	var out []QuotaRisk
	for i := range c.rules {
		q := &c.rules[i]
		if q.quota == nil {
			continue
		}
		if q.quota.authorChosen() {
			out = append(out, QuotaRisk{Field: q.field + ".quota.per", Value: q.quota.per,
				Msg: fmt.Sprintf("a pod's author chooses this tenant (%s): each value it writes is a tenant of its own in its namespace, with max addresses each; set \"vouched\": true only where something the operator trusts sets the value", authorSource(q.quota.per))})
		}
		out = append(out, c.escapes(i)...)
	}
	return out, nil
}

// authorSource says where a pod's author sets per's value.
func authorSource(per string) string {
	if strings.HasPrefix(per, quotaPerAnnotation) {
		return "a pod annotation"
	}
	return "args.cni (Multus cni-args) or a Nomad job's CNI args"
}

// escapes lists where an author whose pod rule i's namespace pattern
// matches can take it instead of rule i, by what it sets (the rules in
// order, as matching walks them, up to the first that every pod of those
// namespaces matches), to a rule without the same tenant's quota: one
// that matches on what the author sets, or any later one when rule i
// itself does; and the defaults.
func (c *argsConfig) escapes(i int) []QuotaRisk {
	q := &c.rules[i]
	var out []QuotaRisk
	escape := func(where, why string) {
		out = append(out, QuotaRisk{Field: q.field + ".quota", Value: where, Msg: "a pod's author can step around this quota: making its pod match " + why})
	}
	for j := range c.rules {
		r := &c.rules[j]
		if !patternsOverlap(r.namespace, q.namespace) {
			continue
		}
		chosen := j != i && (r.authorCriteria() || (j > i && q.authorCriteria()))
		if chosen && !r.quota.sameTenants(q.quota) {
			why := r.field + ", which has no quota"
			if r.quota != nil {
				why = fmt.Sprintf("%s, whose quota counts another tenant (%s)", r.field, r.quota.per)
			}
			escape(r.field, why)
		}
		if !r.authorCriteria() && patternCovers(r.namespace, q.namespace) {
			return out // r takes every pod of those namespaces that reaches it
		}
	}
	if c.defaults != nil && q.authorCriteria() {
		escape("ipam.defaultPools", "no rule, for ipam.defaultPools, which have no quota")
	}
	return out
}

// patternsOverlap: some namespace may match both patterns ("" matches
// every namespace). Two patterns with wildcards are taken to overlap.
func patternsOverlap(a, b string) bool {
	switch {
	case a == "" || b == "":
		return true
	case literal(a):
		return glob(b, a)
	case literal(b):
		return glob(a, b)
	}
	return true
}

// patternCovers: every namespace pattern q matches, p matches.
func patternCovers(p, q string) bool {
	return p == "" || p == q || (q != "" && literal(q) && glob(p, q))
}

// literal: pattern p matches itself alone.
func literal(p string) bool { return !strings.ContainsAny(p, `*?[\`) }
