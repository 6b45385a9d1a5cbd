// Package pool is the Pool object that selectors hand to allocators
// (docs/ipam-ds-static.md, "The Pool object"), its validation, and the selector result that
// carries it.
package pool

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// MaxNameLen bounds a pool name: it becomes a directory name.
const MaxNameLen = 64

// MaxPerAttachment bounds the pools of one attachment, as the allocator
// bounds range sets: each costs an address, a lock and a few files per ADD,
// and no real attachment needs more.
const MaxPerAttachment = 64

// Pool names one pool and, optionally, its ranges and a requested address.
type Pool struct {
	Name        string `json:"name"`
	RequestedIP string `json:"requested-ip,omitempty"`
	// RequestedIPUnderscore is requested_ip, the key passcod-style
	// selectors write. ParseList moves it into RequestedIP (requested-ip
	// wins when both are given), so nothing else reads it.
	RequestedIPUnderscore string `json:"requested_ip,omitempty"`

	// Inline single range, host-local's keys.
	Subnet     string `json:"subnet,omitempty"`
	RangeStart string `json:"rangeStart,omitempty"`
	RangeEnd   string `json:"rangeEnd,omitempty"`
	Gateway    string `json:"gateway,omitempty"`

	// Inline range set; takes precedence over Subnet.
	Ranges []addrspace.RangeConfig `json:"ranges,omitempty"`

	// Addresses and CIDRs never handed out from this pool.
	Exclude []string `json:"exclude,omitempty"`

	// Overflow names the pool to allocate from when this one has no free
	// address; that pool's own overflow continues the chain (Chain).
	Overflow string `json:"overflow,omitempty"`
	// OverflowPools is the chain as a selector resolved it: the pools
	// after this one, in order, each with what the selector knows of
	// its ranges (a bare name: the allocator's poolDefinitions).
	OverflowPools []Pool `json:"overflowPools,omitempty"`
}

// takeUnderscore moves requested_ip into requested-ip, in p and its
// chain. A field of its own rather than an UnmarshalJSON keeps a list of
// pools one pass of encoding/json: a method would decode every pool of
// it (a selection's chains included) a second time.
func (p *Pool) takeUnderscore() {
	if p.RequestedIP == "" {
		p.RequestedIP = p.RequestedIPUnderscore
	}
	p.RequestedIPUnderscore = ""
	for i := range p.OverflowPools {
		p.OverflowPools[i].takeUnderscore()
	}
}

// Validate checks every field; field is where the pool sits in the config
// (for example "ipam.pools[1]").
func (p Pool) Validate(field string) error {
	if err := ValidName(field+".name", p.Name); err != nil {
		return err
	}
	if _, err := p.Requested(field); err != nil {
		return err
	}
	if _, err := p.Exclusions(field); err != nil {
		return err
	}
	if err := validOverflow(field, p.Overflow); err != nil {
		return err
	}
	if len(p.OverflowPools) > MaxPerAttachment {
		return cnierr.InvalidConfig(field+".overflowPools", fmt.Sprintf("%d pools", len(p.OverflowPools)), fmt.Sprintf("at most %d pools per chain", MaxPerAttachment))
	}
	for i, q := range p.OverflowPools {
		if len(q.OverflowPools) > 0 {
			return cnierr.InvalidConfig(fmt.Sprintf("%s.overflowPools[%d].overflowPools", field, i), q.Name, "a chain's pools are listed once, in its first pool")
		}
		if err := q.Validate(fmt.Sprintf("%s.overflowPools[%d]", field, i)); err != nil {
			return err
		}
	}
	_, _, err := p.InlineRanges(field)
	return err
}

// Exclusions parses exclude.
func (p Pool) Exclusions(field string) (addrspace.Exclusions, error) {
	return addrspace.ParseExclusions(field+".exclude", p.Exclude)
}

// Requested parses requested-ip; the zero Addr means none.
func (p Pool) Requested(field string) (netip.Addr, error) {
	if p.RequestedIP == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(p.RequestedIP)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, cnierr.InvalidConfig(field+".requested-ip", p.RequestedIP, "not an IP address")
	}
	return a.Unmap(), nil
}

// InlineRanges returns the pool's own range set, if it carries one: inline
// ranges first, then an inline subnet with host-local's range keys.
func (p Pool) InlineRanges(field string) (addrspace.RangeSet, bool, error) {
	switch {
	case len(p.Ranges) > 0:
		rs, err := addrspace.ParseRangeSet(field+".ranges", p.Ranges)
		return rs, err == nil, err
	case p.Subnet != "":
		// The range keys sit in the pool object itself: errors name
		// <field>.subnet, not a range-set element that is not there.
		r, err := addrspace.RangeConfig{
			Subnet: p.Subnet, RangeStart: p.RangeStart, RangeEnd: p.RangeEnd, Gateway: p.Gateway,
		}.Canonicalize(field)
		if err != nil {
			return nil, false, err
		}
		return addrspace.RangeSet{r}, true, nil
	case p.RangeStart != "" || p.RangeEnd != "" || p.Gateway != "":
		return nil, false, cnierr.MissingConfig(field + ".subnet")
	}
	return nil, false, nil
}

// ValidName enforces [A-Za-z0-9][A-Za-z0-9_.-]*, at most 64 characters:
// a pool name is a directory name, so nothing else may pass.
func ValidName(field, name string) error {
	if name == "" {
		return cnierr.MissingConfig(field)
	}
	if len(name) > MaxNameLen {
		return cnierr.InvalidConfig(field, name[:16]+"...", fmt.Sprintf("longer than %d characters", MaxNameLen))
	}
	for i, r := range name {
		alnum := r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		if !alnum && (i == 0 || (r != '_' && r != '.' && r != '-')) {
			return cnierr.InvalidConfig(field, name, "must match [A-Za-z0-9][A-Za-z0-9_.-]*")
		}
	}
	return nil
}

// validOverflow checks the overflow of the pool or definition at field,
// if it names one.
func validOverflow(field, overflow string) error {
	if overflow == "" {
		return nil
	}
	return ValidName(field+".overflow", overflow)
}

// Names lists the pools' names, in order.
func Names(pools []Pool) []string {
	out := make([]string, len(pools))
	for i, p := range pools {
		out[i] = p.Name
	}
	return out
}

// ParseList decodes and validates an array of pools found at field.
func ParseList(raw json.RawMessage, field string) ([]Pool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, cnierr.MissingConfig(field)
	}
	var pools []Pool
	if err := netconf.Decode(raw, field, &pools); err != nil {
		return nil, err
	}
	return pools, checkList(pools, field)
}

// checkList validates pools, a list found at field, as ParseList does.
func checkList(pools []Pool, field string) error {
	if len(pools) == 0 {
		return cnierr.InvalidConfig(field, "[]", "must list at least one pool")
	}
	if len(pools) > MaxPerAttachment {
		return cnierr.InvalidConfig(field, fmt.Sprintf("%d pools", len(pools)), fmt.Sprintf("at most %d pools per attachment", MaxPerAttachment))
	}
	seen := make(map[string]bool, len(pools))
	for i := range pools {
		pools[i].takeUnderscore()
	}
	for i, p := range pools {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := p.Validate(f); err != nil {
			return err
		}
		if seen[p.Name] {
			return cnierr.InvalidConfig(f+".name", p.Name, "pool listed twice")
		}
		seen[p.Name] = true
	}
	return nil
}

// FromPrevResult returns prevResult.pools; ok is false when the prevResult
// carries no pools (the allocator then runs standalone).
func FromPrevResult(conf *netconf.Envelope) (pools []Pool, ok bool, err error) {
	if sel, built := conf.PrevBuilt.(*Selection); built {
		// The selector's own objects, checked as the bytes would be.
		if sel.Pools == nil {
			return nil, false, nil
		}
		pools = slices.Clone(sel.Pools)
		err = checkList(pools, "prevResult.pools")
		return pools, err == nil, err
	}
	prev, err := prevSelection(conf)
	if err != nil || absent(prev.Pools) {
		return nil, false, err
	}
	pools, err = ParseList(prev.Pools, "prevResult.pools")
	return pools, err == nil, err
}
