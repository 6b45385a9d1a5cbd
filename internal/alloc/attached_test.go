package alloc_test

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// claimer is a HoldClaimer whose claims answer reserve and whose Share
// answers share; Found hands the engine found.
type claimer struct {
	claimOnly
	reserve, share error
	found          *alloc.Hold
}

func (c *claimer) Reserve(a alloc.Attachment, ip netip.Addr) (bool, error) {
	if c.reserve != nil {
		return false, c.reserve
	}
	return c.claimOnly.Reserve(a, ip)
}

func (c *claimer) Found(*alloc.HoldFound) (*alloc.Hold, error) { return c.found, nil }
func (c *claimer) KeyHold() error                              { return &alloc.HoldFound{} }
func (c *claimer) TakeOver()                                   {}
func (c *claimer) FreeFound() error                            { return nil }
func (c *claimer) Share(alloc.Attachment, string) (bool, error) {
	return c.share == nil, c.share
}

// A store that is no Ledger reports the attachment's address as it
// found it in its claim (an *AttachedFound, also from a migration
// target's Share); the engine answers it with its 102, which names
// the address, the target, the container and the interface.
func TestAttachedFoundIsJudged(t *testing.T) {
	rs := alloctest.Small(t)
	held := netip.MustParseAddr("10.0.0.5")
	found := &alloc.AttachedFound{Addr: held}
	boom := errors.New("boom")
	// A live owner's address, for a migration target to share.
	owned := &alloc.Hold{Key: "vm", IfName: "eth0", Address: "10.0.0.3", Node: "n1", Owner: "cid-src", Migration: "m0"}
	want102 := fmt.Sprintf("address=%s pool a containerID=%s ifname=%s", held, alloctest.CidA.ContainerID, alloctest.CidA.IfName)
	for _, tc := range []struct {
		name      string
		s         *claimer
		requested netip.Addr
		key, mig  string
		want      error // nil: the 102 of held
	}{
		{name: "a claim of the search", s: &claimer{reserve: found}},
		{name: "a claim of a requested address", s: &claimer{reserve: found}, requested: netip.MustParseAddr("10.0.0.4")},
		{name: "wrapped by the store", s: &claimer{reserve: fmt.Errorf("claim: %w", found)}},
		{name: "a migration target's share", s: &claimer{found: owned, share: found}, key: "vm", mig: "m1"},
		{name: "any other error as it is", s: &claimer{reserve: boom}, want: boom},
		{name: "any other error of Share as it is", s: &claimer{found: owned, share: boom}, key: "vm", mig: "m1", want: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.held = map[netip.Addr]bool{}
			tg := alloc.Target{Label: "pool a", Scope: alloc.Scope{Pool: "a"}, Set: rs, Requested: tc.requested}
			_, _, err := alloc.AllocateClaimed(tc.s, alloctest.CidA, "n1", tg, tc.key, tc.mig, time.Now())
			if tc.want != nil {
				if !errors.Is(err, tc.want) || cnierr.Code(err) == cnierr.CodeDuplicateAttach {
					t.Fatalf("err = %v, want %v as it is", err, tc.want)
				}
				return
			}
			alloctest.AssertCode(t, err, cnierr.CodeDuplicateAttach)
			if e := cnierr.As(err); e.Msg != "attachment already holds an address" || e.Details != want102 {
				t.Errorf("102 = %q (%s), want %q", e.Msg, e.Details, want102)
			}
		})
	}
}

// A migration target never claims a new address, whatever the store's
// claims would do: it reads its key's hold (KeyHold) before any claim,
// and a key that holds none is 107, the engine's.
func TestMigrationTargetClaimsNothing(t *testing.T) {
	s := &claimer{claimOnly: claimOnly{held: map[netip.Addr]bool{}}} // every claim would succeed
	tg := alloc.Target{Label: "pool a", Scope: alloc.Scope{Pool: "a"}, Set: alloctest.Small(t)}
	_, _, err := alloc.AllocateClaimed(s, alloctest.CidA, "n1", tg, "vm", "m1", time.Now())
	alloctest.AssertCode(t, err, cnierr.CodeNoMigrationSource)
	if len(s.held) != 0 {
		t.Errorf("the target claimed %v", s.held)
	}
}
