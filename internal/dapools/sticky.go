package dapools

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// holdID names the key's hold for target t: alloc.StickyID per scope and
// interface; a standalone network's second and later range sets (one
// state directory, several addresses per key) add their index.
func (c *config) holdID(ifname string, t alloc.Target) string {
	if t.RangeID > 0 {
		ifname += "\x00" + strconv.Itoa(t.RangeID)
	}
	return alloc.StickyID(c.stickyKey, ifname)
}

// allocateSticky is one target's ADD for an attachment with a sticky key
// (see alloc.StickyAddr): the key's address again when it has one,
// otherwise a fresh allocation whose hold record is written after the
// reservation. What it did is recorded in u for a rollback.
func (c *config) allocateSticky(d *hostlocal.Disk, att alloc.Attachment, t alloc.Target, u *undo, now time.Time) (netip.Prefix, netip.Addr, error) {
	id := c.holdID(att.IfName, t)
	e, err := d.Hold(id)
	if err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	var h *alloc.Hold
	if e != nil && e.Stale == "" {
		if !e.For(c.stickyKey, att.IfName) {
			return netip.Prefix{}, netip.Addr{}, alloc.StickyCollision(c.stickyKey, att.IfName, e.Hold)
		}
		h = &e.Hold
	}
	addr, err := alloc.StickyAddr(h, att.ContainerID, t.Requested, now)
	if err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	if addr.IsValid() && !e.Held() {
		// Reserved by this very container: a duplicate ADD, which the
		// engine answers (102).
		return t.Allocator(d).Allocate(att, t.RangeID, t.Set, t.Requested, t.Label)
	}
	if addr.IsValid() {
		if r, ok := t.Set.RangeFor(addr); ok && r.Usable(addr) && addr != r.Gateway && !t.Exclude.Contains(addr) {
			if err := d.ClaimHold(*e, att, c.sticky.HoldFor.String()); err != nil {
				return netip.Prefix{}, netip.Addr{}, err
			}
			u.claimed(d, *e)
			return netip.PrefixFrom(addr, r.Subnet.Bits()), r.Gateway, nil
		}
	}
	// No usable hold: an expired one or one outside today's ranges is
	// freed, a stale record is overwritten below.
	if e != nil && e.Stale == "" {
		if _, err := d.FreeHold(*e); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
	}
	p, gw, err := t.Allocator(d).Allocate(att, t.RangeID, t.Set, t.Requested, t.Label)
	if err != nil {
		return p, gw, err
	}
	u.reservedIn(d, p.Addr())
	rec := alloc.Hold{Key: c.stickyKey, IfName: att.IfName, Address: p.Addr().String(), Network: c.Network, Owner: att.ContainerID, HoldFor: c.sticky.HoldFor.String()}
	if err := d.PutHold(id, rec); err != nil {
		return p, gw, err
	}
	u.recorded(d, id)
	return p, gw, nil
}

// releaseHolds is DEL's part for holds: every reservation of att that a
// key holds becomes a hold until now + its record's holdFor (that of
// the ADD; record first, then the file). alloc.Release then no longer
// sees those files as att's.
func (c *config) releaseHolds(d *hostlocal.Disk, att alloc.Attachment, now time.Time) ([]netip.Addr, error) {
	holds, err := c.holdsOf(d, att)
	if err != nil {
		return nil, err
	}
	var held []netip.Addr
	for _, e := range holds {
		if att.Network != "" && e.Network != "" && e.Network != att.Network {
			continue
		}
		if err := d.MakeHold(e, e.Release(now)); err != nil {
			return held, err
		}
		held = append(held, e.Addr)
	}
	return held, nil
}

// holdsOf finds the records of att's reservations. An attachment that
// holds nothing here has none (one index lookup); with the key at hand
// (runtimes usually send DEL the ADD's arguments) the records are read by
// ID; only when that does not account for every address (no key, or
// reservations older than the key) are all records listed.
func (c *config) holdsOf(d *hostlocal.Disk, att alloc.Attachment) ([]hostlocal.HoldEntry, error) {
	addrs, err := d.ByAttachment(att)
	if err != nil || len(addrs) == 0 {
		return nil, err
	}
	if c.stickyKey != "" {
		var found []hostlocal.HoldEntry
		for n := range addrs {
			e, err := d.Hold(c.holdID(att.IfName, alloc.Target{RangeID: n}))
			if err != nil {
				return nil, err
			}
			if e != nil && e.Stale == "" && !e.Held() && e.Owner == att.ContainerID && e.IfName == att.IfName {
				found = append(found, *e)
			}
		}
		if len(found) == len(addrs) {
			return found, nil
		}
	}
	return d.HoldsOf(att)
}
