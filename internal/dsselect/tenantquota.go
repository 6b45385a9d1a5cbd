package dsselect

import (
	"slices"
	"strings"
	"sync"

	"github.com/cniplugins/cniplugins/internal/pool"
)

// TenantQuotas answers what `cniplugins pools` shows beside a tenant's
// addresses: the quota ipam-ds-args gives that tenant's ADDs, which both
// allocators enforce as the selection carries it (alloc.QuotaGate). It
// asks tenantQuota, the function that computes an ADD's quota, for an
// attachment rebuilt from the tenant, rather than restating a rule: a
// tenant's limit is the smallest max among the rules its namespace
// reaches with that tenant, not the max of the first rule naming a pool.
type TenantQuotas struct {
	c *argsConfig
	// found caches each tenant's quotas: pools asks once per pool the
	// tenant has addresses in. A long-lived caller (a metrics endpoint)
	// may ask from several goroutines, hence mu.
	mu    sync.Mutex
	found map[string][]*pool.Quota
}

// Of is the max of tenant's quota that counts pool name, false when no
// rule gives the tenant a quota counting it. A tenant that names no
// namespace (vouched for, or sent without one) may be given different
// quotas from different namespaces: Of is the smallest, the one at which
// ADDs start being refused.
func (q *TenantQuotas) Of(name, tenant string) (int, bool) {
	q.mu.Lock()
	qs, ok := q.found[tenant]
	if !ok {
		qs = q.c.quotasOfTenant(tenant)
		q.found[tenant] = qs
	}
	q.mu.Unlock()
	limit, found := 0, false
	for _, qt := range qs {
		if slices.Contains(qt.Pools, name) && (!found || qt.Max < limit) {
			limit, found = qt.Max, true
		}
	}
	return limit, found
}

// quotasOfTenant is every quota an ADD of tenant can carry: tenantQuota
// for an attachment presenting the tenant, in the tenant's namespace or,
// when it names none, in each of sampleNamespaces.
func (c *argsConfig) quotasOfTenant(tenant string) []*pool.Quota {
	ns, per, value, ok := splitTenant(tenant)
	if !ok {
		return nil
	}
	namespaces := []string{ns}
	if ns == "" {
		namespaces = c.sampleNamespaces()
	}
	var out []*pool.Quota
	for _, n := range namespaces {
		a := attachment{namespace: n, args: map[string]string{}, annotations: map[string]string{}}
		if key, isArg := strings.CutPrefix(per, quotaPerArg); isArg {
			a.args[key] = value
		} else if key, isAnn := strings.CutPrefix(per, quotaPerAnnotation); isAnn {
			a.annotations[key] = value
		}
		if qt := c.tenantQuota(tenant, nil, a); qt != nil && qt.Validate("") == nil {
			out = append(out, qt)
		}
	}
	return out
}

// splitTenant reads a tenant as ruleQuota.tenant writes it:
// "namespace=<ns>", "<per>=<value>" or "<ns>/<per>=<value>" (per an arg:
// or annotation:); ns is "" when it names no namespace. A namespace
// holds no '/', so the first one ends it.
func splitTenant(tenant string) (ns, per, value string, ok bool) {
	if v, isNS := strings.CutPrefix(tenant, quotaPerNamespace+"="); isNS {
		return v, quotaPerNamespace, v, v != ""
	}
	authorKey := func(s string) bool {
		return strings.HasPrefix(s, quotaPerArg) || strings.HasPrefix(s, quotaPerAnnotation)
	}
	rest := tenant
	if !authorKey(rest) {
		if ns, rest, ok = strings.Cut(tenant, "/"); !ok || ns == "" || !authorKey(rest) {
			return "", "", "", false
		}
	}
	per, value, ok = strings.Cut(rest, "=")
	return ns, per, value, ok && value != ""
}

// sampleNamespaces stand for the namespaces a tenant that names none may
// come from: none at all (""), which reaches the rules without a
// namespace pattern just as a namespace that no pattern matches does,
// and, for each rule's pattern, one namespace it matches.
func (c *argsConfig) sampleNamespaces() []string {
	out := []string{""}
	for _, r := range c.rules {
		if s, ok := sampleOf(r.namespace); ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// namespaceChars are a Kubernetes namespace's characters (a DNS label).
const namespaceChars = "abcdefghijklmnopqrstuvwxyz0123456789-"

// sampleOf is a namespace that pattern matches: its literal characters,
// a namespace's character for each wildcard; false when pattern is empty
// or the sample does not match.
func sampleOf(pattern string) (string, bool) {
	if pattern == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '*', '?':
			b.WriteByte('x')
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteByte(pattern[i])
			}
		case '[':
			// A class holding an escaped ']' is cut short here, matches
			// nothing, and leaves the pattern without a sample.
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				return "", false
			}
			class := pattern[i : i+end+2]
			j := strings.IndexFunc(namespaceChars, func(ch rune) bool { return glob(class, string(ch)) })
			if j < 0 {
				return "", false
			}
			b.WriteByte(namespaceChars[j])
			i += end + 1
		default:
			b.WriteByte(pattern[i])
		}
	}
	s := b.String()
	return s, glob(pattern, s)
}
