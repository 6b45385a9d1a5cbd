package alloc

import (
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Overflow chains: a pool whose ADD finds no free address hands the ADD
// to the next pool of its chain (Target.Overflow), and only then. The
// rules are the same for every store:
//
//	before allocating   the attachment is looked for in every pool of the
//	                    chain: one that holds an address anywhere is a
//	                    retried ADD (102), never given a second address;
//	                    a sticky key that holds one in a pool starts there
//	allocating          pool after pool, in order, moving on only on 100;
//	                    any other error (a requested address's 101) stays
//	                    in its pool; the earlier pools are tried first on
//	                    every ADD, so they are preferred again as soon as
//	                    they have room

// Chain is t and its overflow pools, in order.
func (t Target) Chain() []Target {
	if len(t.Overflow) == 0 {
		return []Target{t}
	}
	return append([]Target{t}, t.Overflow...)
}

// Presence is what a store finds of an attachment in one pool of a chain.
type Presence struct {
	// Attached is the address the attachment holds there (the zero Addr:
	// none).
	Attached netip.Addr
	// KeyHeld: the attachment's sticky key holds an address there.
	KeyHeld bool
}

// AllocateOverflow is the ADD of target t with its overflow chain:
// allocate is one pool's ADD (plain or keyed) in the store, locate what
// the store knows of the attachment in one pool. It returns the address,
// its gateway and the pool it came from. Without a chain it is
// allocate(t), at no extra cost. A requested address stays in t.
func AllocateOverflow(t Target, a Attachment, locate func(Target) (Presence, error), allocate func(Target) (netip.Prefix, netip.Addr, error)) (netip.Prefix, netip.Addr, Target, error) {
	if len(t.Overflow) == 0 || t.Requested.IsValid() {
		p, gw, err := allocate(t)
		return p, gw, t, err
	}
	chain := t.Chain()
	order := chain
	// The first pool needs no look: its own ADD finds the attachment
	// (102) or its key's hold there.
	for i, c := range chain {
		if i == 0 {
			continue
		}
		at, err := locate(c)
		if err != nil {
			return netip.Prefix{}, netip.Addr{}, c, err
		}
		if at.Attached.IsValid() {
			return netip.Prefix{}, netip.Addr{}, c, attachedErr(at.Attached, a, c.Label+" (overflow of pool "+t.Scope.Pool+")")
		}
		if at.KeyHeld && i > 0 {
			// The key's pool first, then the chain as usual.
			order = append([]Target{c}, append(chain[:i:i], chain[i+1:]...)...)
		}
	}
	var err error
	for _, c := range order {
		if c, err = c.Resolved(); err != nil {
			return netip.Prefix{}, netip.Addr{}, c, err
		}
		var p netip.Prefix
		var gw netip.Addr
		p, gw, err = allocate(c)
		if cnierr.Code(err) != cnierr.CodePoolExhausted {
			return p, gw, c, err
		}
	}
	return netip.Prefix{}, netip.Addr{}, t, cnierr.New(cnierr.CodePoolExhausted, "no addresses available in the overflow chain",
		"%s: every pool is full (%s)", chainNames(chain), cnierr.As(err).Details)
}

// chainNames is "a → b → c".
func chainNames(chain []Target) string {
	s := ""
	for i, c := range chain {
		if i > 0 {
			s += " → "
		}
		s += c.Scope.Pool
	}
	return s
}

// LocateIn is Presence in pool t of a store the engine reads (the disk
// store's, locked): what a holds there and key's ("" none) hold record.
func LocateIn(l HoldStore, a Attachment, t Target, key string, now time.Time) (Presence, error) {
	held, err := l.ByAttachment(a)
	var e *HoldRecord
	if err == nil && key != "" {
		e, err = LookupHold(l, HoldID(key, a.IfName, t.RangeID))
	}
	return Located(t, held, e, key, a.IfName, now), err
}

// Located is Presence in pool t over what a store read there: the
// addresses the attachment (on ifname) holds, and its key's hold record,
// judged (nil: none). An overflow pool is a pool: it has no legacy
// id-only reservations to look for.
func Located(t Target, held []netip.Addr, e *HoldRecord, key, ifname string, now time.Time) Presence {
	for _, ip := range held {
		// A pool's store holds only its own addresses, so any is the
		// attachment's there, whatever the pool's ranges say now (an
		// overflow pool's are not even read before an ADD spills).
		if t.Scope.Pool != "" || t.Set.Contains(ip) {
			return Presence{Attached: ip}
		}
	}
	return Presence{KeyHeld: e != nil && e.Stale == "" && e.For(key, ifname) && !e.Expired(now)}
}
