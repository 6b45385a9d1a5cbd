package etcdkv

import "time"

// Lease returns a lease that etcd keeps for at least minLeft from now:
// the one this host granted lately (remembered between execs, like the
// failing members), or a new one of twice minLeft. So keys put with it
// (PutLease) live between minLeft and twice that, and a host asks for one
// lease per minLeft however many keys it puts: no round trip on most
// commands.
func (c *Client) Lease(minLeft time.Duration) (int64, error) {
	now := time.Now()
	if l := c.memory.Lease; l.ID != 0 && l.Until.Sub(now) >= minLeft {
		return l.ID, nil
	}
	var out wireLeaseGrantResponse
	// A grant changes nothing anyone relies on (a lease nobody uses just
	// expires): it may be sent again.
	if err := c.do("/v3/lease/grant", wireLeaseGrant{TTL: int64(2 * minLeft / time.Second)}, &out, true); err != nil {
		return 0, err
	}
	// etcd counts the TTL from when it granted the lease, after now.
	l := heldLease{ID: out.ID, Until: now.Add(time.Duration(out.TTL) * time.Second)}
	c.memory.update(func(m *memory) {
		if l.Until.After(m.Lease.Until) {
			m.Lease = l
		}
	})
	return l.ID, nil
}

// ForgetLease drops the lease Lease handed out: etcd no longer knows it
// (a request that used it failed with ErrLeaseNotFound, which does this
// too), so the next Lease, in this exec or the next, grants a new one.
func (c *Client) ForgetLease() {
	lease := c.memory.Lease.ID
	c.memory.update(func(m *memory) {
		if m.Lease.ID == lease {
			m.Lease = heldLease{}
		}
	})
}

// heldLease is the lease a host puts its expiring keys with.
type heldLease struct {
	ID    int64     `json:"id,omitempty"`
	Until time.Time `json:"until,omitempty"` // etcd keeps it at least until then
}
