package alloc

import (
	"fmt"
	"time"
)

// Every store's GC is planned here, once: a store reads its claims and
// holds as a ClaimsView, and PlanClaims decides each claim and each
// hold (HoldEnds). etcd reads its view as it keeps it (each
// owner of a migration has its own claim); the disk store's PlanGC reads
// its records as such claims, and adds the repairs of its records. A
// store whose step's guard failed reads that claim again and asks
// PlanClaims anew.

// GCClaim is one claim as a GC read it, on Node ("" in a store without
// nodes); Ref is the store's handle to apply a step by.
type GCClaim struct {
	Owner  Attachment
	Node   string
	Shared bool // an address a migration's two owners share
	Ref    any
}

// GCHold is one hold record as a GC read it.
type GCHold struct {
	Hold
	Ref any
}

// ClaimsView is what a GC of Network ("" for every network) on Node
// read: the claims it may release and the hold records it may end.
type ClaimsView struct {
	Network, Node string
	Claims        []GCClaim
	Holds         []GCHold
}

// ClaimsPlan is PlanClaims' decision, each list in the view's order: the
// claims released as their DEL would (a key's claim becomes its hold),
// the shares that end as their owner's DEL would (the source's hands the
// address over, the target's drops its share), and the holds freed.
type ClaimsPlan struct {
	Release, EndShare []GCClaim
	Expire            []GCHold
}

// PlanClaims decides a GC over v: a claim of another network or of
// another node stays (that node's runtime answers for it), as does one
// keep keeps (a hold's owner is one KeepSet always keeps: only its expiry
// ends it, HoldEnds); a shared one ends its share; any other is released.
// A hold goes once HoldEnds says so.
func PlanClaims(v ClaimsView, keep func(Attachment) bool, now time.Time) ClaimsPlan {
	var p ClaimsPlan
	for _, c := range v.Claims {
		switch {
		case v.Network != "" && c.Owner.Network != v.Network, c.Node != v.Node, keep(c.Owner):
		case c.Shared:
			p.EndShare = append(p.EndShare, c)
		default:
			p.Release = append(p.Release, c)
		}
	}
	for _, h := range v.Holds {
		if HoldEnds(h.Hold, v.Network, now) {
			p.Expire = append(p.Expire, h)
		}
	}
	return p
}

// HoldEnds reports a hold a GC of network ("" for every network) ends:
// one past its expiry at now, whichever node held it last.
func HoldEnds(h Hold, network string, now time.Time) bool {
	return (network == "" || h.Network == network) && h.Expired(now)
}

// NodeGone is whether an operator may collect node's claims as a gone
// node's (gc --etcd --apply, unless --force): not while it was seen alive
// (lastSeen, on host) within deadAfter, as its runtime may still DEL and
// GC, and its live containers still use the addresses that GC would free.
func NodeGone(node, host string, lastSeen, now time.Time, deadAfter time.Duration) error {
	if age := now.Sub(lastSeen); age < deadAfter {
		return fmt.Errorf("node %s (host %q) was seen alive %s ago, less than --dead-after %s: it may still use its addresses; wait, or pass --force if it is gone for good",
			node, host, age.Round(time.Second), deadAfter)
	}
	return nil
}
