package etcdstore

import (
	"net/netip"
	"strconv"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// ScopeStates reads each scope's claims and exhaustion marks, and in a
// pool the tenants its addresses count for: reads only, as `leases` does.
// The tenants' records are read once for all the scopes, when the first
// pool with addresses needs them: range sets and empty pools have none.
func (o *Operator) ScopeStates(scopes []alloc.Scope) ([]alloc.ScopeState, error) {
	var tenants map[string]string // "<scope>/<address>" → tenant
	read := false
	out := make([]alloc.ScopeState, len(scopes))
	for i, s := range scopes {
		st := alloc.ScopeState{Place: o.op.keys.scopeAddrs(s), Tenants: map[netip.Addr]string{}}
		claims, err := o.op.cl.List(st.Place, false)
		if err != nil {
			return nil, err
		}
		if s.Pool != "" && len(claims) > 0 && !read {
			if tenants, _, err = o.op.tenantRecords(); err != nil {
				return nil, err
			}
			read = true
		}
		for _, kv := range claims {
			ip, err := netip.ParseAddr(string(kv.Key[len(st.Place):]))
			if err != nil {
				continue // not a claim key
			}
			st.Addrs = append(st.Addrs, ip)
			if t, ok := tenants[s.Path()+"/"+ip.String()]; ok && s.Pool != "" {
				st.Tenants[ip] = t
			}
			if r, ok := decodeRecord(kv.Value); ok && r.Second != "" {
				st.Migrating = append(st.Migrating, ip)
			} else if h, held := decodeHold(kv.Value); !ok && held && h.Held() {
				st.Held = append(st.Held, ip)
			}
		}
		marks, err := o.op.cl.List(o.op.keys.fullScope(s), false)
		if err != nil {
			return nil, err
		}
		for _, m := range marks {
			slot, err := strconv.Atoi(lastSegment(string(m.Key)))
			if err == nil && len(m.Value) > 0 { // empty: freed since
				st.Full = append(st.Full, slot)
			}
		}
		out[i] = st
	}
	return out, nil
}
