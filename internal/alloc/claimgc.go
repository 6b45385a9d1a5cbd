package alloc

import "time"

// Every store's GC is planned here, once: a store reads its claims and
// holds as a ClaimsView, and PlanClaims decides each claim (PlanClaim)
// and each hold (HoldEnds). etcd reads its view as it keeps it (each
// owner of a migration has its own claim); the disk store's PlanGC reads
// its records as such claims, and adds the repairs of its records. A
// store whose step's guard failed reads that claim again and asks
// PlanClaims anew.

// GCClaim is one claim as a GC read it; Ref is the store's handle to
// apply a step by.
type GCClaim struct {
	Owner  Attachment
	Shared bool // an address a migration's two owners share
	Ref    any
}

// GCHold is one hold record as a GC read it.
type GCHold struct {
	Hold
	Ref any
}

// ClaimsView is what a GC of Network ("" for every network) read: the
// claims it may release and the hold records it may end.
type ClaimsView struct {
	Network string
	Claims  []GCClaim
	Holds   []GCHold
}

// ClaimsPlan is PlanClaims' decision, each list in the view's order: the
// claims released as their DEL would (a key's claim becomes its hold),
// the shares that end as their owner's DEL would (the source's hands the
// address over, the target's drops its share), and the holds freed.
type ClaimsPlan struct {
	Release, EndShare []GCClaim
	Expire            []GCHold
}

// PlanClaims decides a GC over v: a claim of another network stays, any
// other as PlanClaim decides; a hold goes once HoldEnds says so.
func PlanClaims(v ClaimsView, keep func(Attachment) bool, now time.Time) ClaimsPlan {
	var p ClaimsPlan
	for _, c := range v.Claims {
		if v.Network != "" && c.Owner.Network != v.Network {
			continue
		}
		switch PlanClaim(c.Owner, false, c.Shared, keep) {
		case ClaimReleased:
			p.Release = append(p.Release, c)
		case ClaimShareEnds:
			p.EndShare = append(p.EndShare, c)
		}
	}
	for _, h := range v.Holds {
		if HoldEnds(h.Hold, v.Network, now) {
			p.Expire = append(p.Expire, h)
		}
	}
	return p
}

// ClaimGC is what a GC does with one claim of a store that keeps each
// attachment's reservation as its own record (etcd: a migration's owner
// and target have one each).
type ClaimGC int

const (
	// ClaimKept: the claim stays.
	ClaimKept ClaimGC = iota
	// ClaimReleased: released as its DEL would (a key's claim becomes
	// the key's hold).
	ClaimReleased
	// ClaimShareEnds: a migration's owner or target not kept; its share
	// goes as its DEL would (the owner's hands the address over, the
	// target's drops its share).
	ClaimShareEnds
)

// PlanClaim is PlanGC's rule for one claim of owner: a key's hold stays
// (only its expiry ends it, HoldEnds), as does a claim keep keeps; a
// shared one ends its share; any other is released.
func PlanClaim(owner Attachment, held, shared bool, keep func(Attachment) bool) ClaimGC {
	switch {
	case held || keep(owner):
		return ClaimKept
	case shared:
		return ClaimShareEnds
	}
	return ClaimReleased
}

// HoldEnds reports a hold a GC of network ("" for every network) ends:
// one past its expiry at now, whichever node held it last.
func HoldEnds(h Hold, network string, now time.Time) bool {
	return (network == "" || h.Network == network) && h.Expired(now)
}
