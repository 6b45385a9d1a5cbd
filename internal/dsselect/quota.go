package dsselect

import (
	"encoding/json"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// A rule's quota: {"per": "namespace" | "arg:KEY" | "annotation:KEY",
// "max": N}. Each tenant (each value of per) holds at most max addresses
// across the pools of its selection; the allocator counts and enforces
// it, atomically with the reservation (code 106).
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
}

// parseQuota reads a rule's quota at field (nil: none).
func parseQuota(field string, raw json.RawMessage) (*ruleQuota, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	// Its two keys one by one, not through a struct: encoding/json's view
	// of a struct type costs every process that decodes one more than the
	// object itself (a rule with a quota is decoded on every command).
	obj, err := knownKeys(raw, field, []string{"per", "max"})
	if err != nil {
		return nil, err
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
	return &ruleQuota{field: strings.TrimSuffix(field, ".quota"), per: per, max: limit}, nil
}

// argKey is the CNI_ARGS key an "arg:KEY" quota reads.
func (q *ruleQuota) argKey() (string, bool) {
	if q == nil {
		return "", false
	}
	return strings.CutPrefix(q.per, quotaPerArg)
}

// of is a's quota: its tenant is "<per>=<value>". An attachment that
// does not present the value is code 7 naming the rule: a tenant no one
// can tell must not escape its quota.
func (q *ruleQuota) of(a attachment) (*pool.Quota, error) {
	if q == nil {
		return nil, nil
	}
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
		return nil, cnierr.New(cnierr.CodeInvalidConfig, "attachment presents no tenant for the rule's quota",
			"%s.quota.per=%s: the attachment has no %s (%s)", q.field, q.per, q.per, a.presented())
	}
	pq := &pool.Quota{Tenant: q.per + "=" + v, Rule: q.field, Max: q.max}
	return pq, pq.Validate(q.field + ".quota")
}

// PoolQuota is a rule's quota as it bounds the tenants of one pool (a
// pool of the rule, or of its overflow chain): what `cniplugins pools`
// shows beside each tenant's addresses there.
type PoolQuota struct {
	Pool string
	Per  string
	Max  int
}

// Quotas lists, in rule order, the quotas of conf's ipam-ds-args rules
// per pool.
func Quotas(conf *netconf.Envelope) ([]PoolQuota, error) {
	c, err := parseArgsConfig(conf)
	if err != nil {
		return nil, err
	}
	var out []PoolQuota
	for _, r := range c.rules {
		if r.quota == nil {
			continue
		}
		for _, p := range r.pools {
			for _, name := range p.Names() {
				out = append(out, PoolQuota{Pool: name, Per: r.quota.per, Max: r.quota.max})
			}
		}
	}
	return out, nil
}

// QuotaOf is the max of the first of qs that bounds tenant in pool, false
// when none does.
func QuotaOf(qs []PoolQuota, pool, tenant string) (int, bool) {
	for _, q := range qs {
		if q.Pool == pool && strings.HasPrefix(tenant, q.Per+"=") {
			return q.Max, true
		}
	}
	return 0, false
}
