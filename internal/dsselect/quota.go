package dsselect

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// A rule's quota: {"per": "namespace" | "arg:KEY" | "annotation:KEY",
// "max": N, "vouched": bool}. Each tenant (each value of per) holds at
// most max addresses across the pools it is counted in; the allocator
// counts and enforces it, atomically with the reservation (code 106).
//
// Only the namespace is the runtime's to say; everything else a rule
// matches on (args, labels, annotations, the pod name, the interface, the
// pools asked for) is the pod author's, so it must neither move an
// address out of its tenant's count nor raise the tenant's limit
// (tenantQuota). And a tenant named by an arg or an annotation is the
// author's choice: it is scoped to the runtime's namespace, unless the
// operator says the value is vouched for.
const (
	quotaPerNamespace  = "namespace"
	quotaPerArg        = "arg:"
	quotaPerAnnotation = "annotation:"
)

// ruleQuota is a rule's quota, validated.
type ruleQuota struct {
	field string // "ipam.rules[2]"
	per   string
	max   int
	// vouched: the value of an arg: or annotation: tenant is set by
	// someone the operator trusts (an admission controller, the runtime),
	// not the pod's author, so it names the same tenant in every
	// namespace.
	vouched bool
}

// parseQuota reads a rule's quota at field (nil: none).
func parseQuota(field string, raw json.RawMessage) (*ruleQuota, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	// Its two keys one by one, not through a struct: encoding/json's view
	// of a struct type costs every process that decodes one more than the
	// object itself (a rule with a quota is decoded on every command).
	obj, err := knownKeys(raw, field, []string{"per", "max", "vouched"})
	if err != nil {
		return nil, err
	}
	var vouched bool
	if v := obj["vouched"]; len(v) > 0 && string(v) != "null" {
		if err := netconf.Decode(v, field+".vouched", &vouched); err != nil {
			return nil, err
		}
	}
	var per string
	var limit int
	for _, k := range []struct {
		key string
		v   any
	}{{"per", &per}, {"max", &limit}} {
		v := obj[k.key]
		if len(v) == 0 || string(v) == "null" {
			return nil, cnierr.MissingConfig(field + "." + k.key)
		}
		if err := netconf.Decode(v, field+"."+k.key, k.v); err != nil {
			return nil, err
		}
	}
	key, isArg := strings.CutPrefix(per, quotaPerArg)
	if !isArg {
		key, _ = strings.CutPrefix(per, quotaPerAnnotation)
	}
	if per != quotaPerNamespace && (key == "" || key == per) {
		return nil, cnierr.InvalidConfig(field+".per", per, `must be "namespace", "arg:KEY" or "annotation:KEY"`)
	}
	if limit < 0 {
		return nil, cnierr.InvalidConfig(field+".max", limit, "must be 0 or more")
	}
	if vouched && per == quotaPerNamespace {
		return nil, cnierr.InvalidConfig(field+".vouched", vouched, `only an "arg:KEY" or "annotation:KEY" tenant is vouched for; the namespace always is`)
	}
	return &ruleQuota{field: strings.TrimSuffix(field, ".quota"), per: per, max: limit, vouched: vouched}, nil
}

// authorChosen: the pod's author can name the tenant (an arg or an
// annotation the operator does not vouch for).
func (q *ruleQuota) authorChosen() bool {
	return q != nil && q.per != quotaPerNamespace && !q.vouched
}

// sameTenants: q and o name every attachment's tenant alike (what
// validate can tell without an attachment).
func (q *ruleQuota) sameTenants(o *ruleQuota) bool {
	return q != nil && o != nil && q.per == o.per && q.vouched == o.vouched
}

// argKey is the CNI_ARGS key an "arg:KEY" quota reads.
func (q *ruleQuota) argKey() (string, bool) {
	if q == nil {
		return "", false
	}
	return strings.CutPrefix(q.per, quotaPerArg)
}

// tenant is a's tenant: "<per>=<value>", and "<namespace>/<per>=<value>"
// when the author chose the value (authorChosen) and the runtime sent a
// namespace, as an author's sticky key is scoped (a namespace holds no
// "/"): otherwise a pod could fill, or spend, another namespace's tenant.
// An attachment that does not present the value is code 7 naming the
// rule: a tenant no one can tell must not escape its quota.
func (q *ruleQuota) tenant(a attachment) (string, error) {
	var v string
	switch {
	case q.per == quotaPerNamespace:
		v = a.namespace
	case strings.HasPrefix(q.per, quotaPerArg):
		v = a.args[strings.TrimPrefix(q.per, quotaPerArg)]
	default:
		v = a.annotations[strings.TrimPrefix(q.per, quotaPerAnnotation)]
	}
	if v == "" {
		return "", cnierr.New(cnierr.CodeInvalidConfig, "attachment presents no tenant for the rule's quota",
			"%s.quota.per=%s: the attachment has no %s (%s)", q.field, q.per, q.per, a.presented())
	}
	if q.authorChosen() && a.namespace != "" {
		return a.namespace + "/" + q.per + "=" + v, nil
	}
	return q.per + "=" + v, nil
}

// quotaOf is a's quota under rule r, its matching rule (nil: none).
func (c *argsConfig) quotaOf(r *rule, a attachment) (*pool.Quota, error) {
	if r == nil || r.quota == nil {
		return nil, nil
	}
	tenant, err := r.quota.tenant(a)
	if err != nil {
		return nil, err
	}
	q := c.tenantQuota(tenant, r, a)
	return q, q.Validate(r.field + ".quota")
}

// tenantQuota is the quota of tenant, a's, with own's limit on a tie (nil:
// the first rule that binds the tenant), nil when no rule binds it. The
// rules that bind a's tenant together are every rule a's author could
// make a match (reachable) whose quota gives a that tenant, each with
// every pool it could give (its pools, its podChoice, their overflow
// chains); alloc.TenantQuota joins them.
func (c *argsConfig) tenantQuota(tenant string, own *rule, a attachment) *pool.Quota {
	var quotas []pool.Quota
	for _, o := range c.reachable(a.namespace) {
		if o.quota == nil {
			continue
		}
		if t, err := o.quota.tenant(a); err != nil || t != tenant {
			continue
		}
		own = cmp.Or(own, o)
		var names []string
		for _, p := range o.pools {
			names = append(names, p.Names()...)
		}
		for _, name := range o.podChoice {
			names = append(names, c.named(name).Names()...)
		}
		quotas = append(quotas, pool.Quota{Rule: o.quota.field, Max: o.quota.max, Pools: names})
	}
	if own == nil {
		return nil
	}
	return alloc.TenantQuota(pool.Quota{Tenant: tenant, Rule: own.quota.field, Max: own.quota.max}, quotas)
}

// reachable lists the rules an attachment in namespace ns matches, or
// can be made to match by its author, in order: those whose namespace
// pattern matches ns, up to the first that matches on the namespace
// alone (no later rule is ever reached in ns).
func (c *argsConfig) reachable(ns string) []*rule {
	var out []*rule
	for i := range c.rules {
		r := &c.rules[i]
		if !matchValue(r.namespace, ns) {
			continue
		}
		out = append(out, r)
		if !r.authorCriteria() {
			break
		}
	}
	return out
}

// authorCriteria: whether r matches an attachment depends on what its
// author sets (Multus lets a pod name its interface, and args.cni fills
// args; Nomad jobs set any CNI arg).
func (r *rule) authorCriteria() bool {
	return r.podName != "" || r.ifname != "" || len(r.args) > 0 || len(r.labels) > 0 || len(r.annotations) > 0
}
