package alloc

import (
	"errors"
	"net/netip"
	"slices"
)

// The overflow shortcut. A store may keep, in the first pool of a chain
// (its head), a spill record of every attachment that took an address
// further down the chain: written before that address is taken, removed
// only once the attachment holds nothing in the chain. An attachment
// without one then holds nothing past the head, so while the head has
// room the chain's rules (look everywhere, then allocate in order) need
// nothing of the other pools, and an ADD may run with the heads alone:
// only a full head or a record needs the whole chain (ErrWholeChain).

// SpillRecorder is the store of a chain's head, keeping its spill
// records.
type SpillRecorder interface {
	// MaySpill reports whether a may hold an address down the chain: it
	// has a record, or can have none.
	MaySpill(a Attachment) (bool, error)
	// RecordSpill records a before it takes an address down the chain.
	RecordSpill(a Attachment) error
	// ForgetSpill removes a's record.
	ForgetSpill(a Attachment) error
	// Spills is every record's attachment, with the network it holds,
	// for GC (GCSpills).
	Spills() ([]Attachment, error)
}

// ErrWholeChain ends an ADD run with the heads of its chains alone that
// needs the other pools: its caller undoes it and runs it again with
// every pool of the chains.
var ErrWholeChain = errors.New("the ADD needs every pool of its chains")

// HeadsSuffice reports whether an ADD of targets may first run with the
// heads of their chains alone: some target heads a chain, and no sticky
// key is in play (its hold may be in any pool of a chain, and only a
// look into each tells).
func HeadsSuffice(targets []Target, key string) bool {
	return key == "" && slices.ContainsFunc(targets, func(t Target) bool { return len(t.Overflow) > 0 })
}

// Spilling is the shortcut for target t's chain, over a store's own
// locate and allocate (AllocateOverflow's, QuotaGate's), which see only
// the pools at hand (have): before an address is taken past the head,
// head records the attachment; a pool not at hand holds nothing of an
// attachment without a record (one look at the head, once), and anything
// more needs the whole chain.
func Spilling(t Target, a Attachment, head SpillRecorder, have func(Scope) bool, locate func(Target) (Presence, error), allocate func(Target) (netip.Prefix, netip.Addr, error)) (func(Target) (Presence, error), func(Target) (netip.Prefix, netip.Addr, error)) {
	var looked, spilled bool
	spilledLocate := func(c Target) (Presence, error) {
		if have(c.Scope) {
			return locate(c)
		}
		if !looked {
			may, err := head.MaySpill(a)
			if err != nil {
				return Presence{}, err
			}
			looked, spilled = true, may
		}
		if spilled {
			return Presence{}, ErrWholeChain
		}
		return Presence{}, nil
	}
	spillingAllocate := func(c Target) (netip.Prefix, netip.Addr, error) {
		if !have(c.Scope) {
			return netip.Prefix{}, netip.Addr{}, ErrWholeChain
		}
		if c.Scope != t.Scope {
			// Before the address, so that the head always knows.
			if err := head.RecordSpill(a); err != nil {
				return netip.Prefix{}, netip.Addr{}, err
			}
		}
		return allocate(c)
	}
	return spilledLocate, spillingAllocate
}

// ForgetSpills is the end of a DEL (delErr its error) over the heads of
// the chains it covered: a's records go once the DEL released everything
// a had in every pool, and not before, since a record is what sends a
// retried ADD past the head to an address a may still hold there. One
// left behind only costs a's next ADD a look into every pool.
func ForgetSpills(heads []SpillRecorder, a Attachment, delErr error) error {
	if delErr != nil {
		return delErr
	}
	var errs []error
	for _, h := range heads {
		errs = append(errs, h.ForgetSpill(a))
	}
	return errors.Join(errs...)
}

// GCSpills is GC's end of the spill records in s (a DEL's is
// ForgetSpills): a record goes when keep does not keep its attachment,
// as GC frees the reservations the record points to. It returns the
// attachments whose records went.
func GCSpills(s SpillRecorder, keep func(Attachment) bool) ([]Attachment, error) {
	recs, err := s.Spills()
	gone := slices.DeleteFunc(recs, keep)
	for i, a := range gone {
		if err := s.ForgetSpill(a); err != nil {
			return gone[:i], err
		}
	}
	return gone, err
}
