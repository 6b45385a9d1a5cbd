package alloc

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// HoldStore is a Ledger that keeps sticky holds: per key and interface a
// record (a Hold) naming the key's address, and the address reserved
// either by the attachment that has it or, once that attachment is
// deleted, by the hold itself (HoldOwner). The store only reads and
// writes; the transitions, their write order and the rule that reconciles
// a record with its address after a crash (judgeHold) are the engine's
// (holds.go).
type HoldStore interface {
	Ledger
	HoldReader
	// WriteHold writes record id atomically (the old record or the new
	// one survives a crash, never a mix).
	WriteHold(id string, h Hold) error
	// RemoveHold removes record id; none is not an error.
	RemoveHold(id string) error
	// Reassign rewrites ip's reservation from owner from to owner to
	// atomically.
	Reassign(ip netip.Addr, from, to Attachment) error
}

// HoldReader reads hold records and the reservations they name: a
// HoldStore, or an operator's unlocked view of one.
type HoldReader interface {
	// ReadHold returns record id; nil without error when there is none,
	// and an error wrapping ErrHoldUnreadable for bytes that are no record.
	ReadHold(id string) (*Hold, error)
	// HoldIDs lists the IDs of every record.
	HoldIDs() ([]string, error)
	// Owner returns who reserved ip, if anyone.
	Owner(ip netip.Addr) (Attachment, bool, error)
}

// ErrHoldUnreadable marks a hold record that does not decode: it holds
// nothing (judged stale), and is overwritten or dropped like any stale one.
var ErrHoldUnreadable = errors.New("hold record does not decode")

// holdKind is the owner kind of a held address (Attachment.Kind "sticky"):
// a '_' owner, which GC never frees for lack of a container.
const holdKind = "_sticky"

// HoldOwner is the owner of an address held for hold id.
func HoldOwner(id string) Attachment { return Attachment{ContainerID: holdKind, IfName: id} }

// HoldIDOf returns the hold ID owner names, if it is a hold.
func HoldIDOf(owner Attachment) (string, bool) {
	return owner.IfName, owner.ContainerID == holdKind && ValidHoldID(owner.IfName)
}

// ValidHoldID reports an ID StickyID (or HoldID) makes: 32 lower-case hex
// digits, so that it names a file and nothing else.
func ValidHoldID(id string) bool {
	return len(id) == 32 && !strings.ContainsFunc(id, func(r rune) bool { return (r < '0' || r > '9') && (r < 'a' || r > 'f') })
}

// HoldID names key's hold for one target: StickyID per scope and
// interface; a standalone network's second and later range sets (one
// scope, several addresses per key) add their index.
func HoldID(key, ifname string, rangeID int) string {
	if rangeID > 0 {
		ifname += "\x00" + strconv.Itoa(rangeID)
	}
	return StickyID(key, ifname)
}

// HoldRecord is a hold record as found in a store, judged against the
// reservation of its address (judgeHold): Hold is what it effectively
// says; Stale, when not "", why it holds nothing. Written is the record
// as the store keeps it, which differs from Hold where a crash stopped a
// transition between its two writes (Unfinished).
type HoldRecord struct {
	ID string
	Hold
	Addr    netip.Addr
	Stale   string
	Written Hold
}

// judgeHold is the rule that reconciles record h (ID id) with the
// reservation of its address (owner, exists), whatever a crash between
// two writes of a transition left:
//
//	reserved for the hold                   held (a take-over that did not
//	                                        finish its second write is undone)
//	reserved by h.Owner                     reserved by h.Owner
//	reserved by h.LastOwner, h held         reserved by h.LastOwner (a DEL that
//	                                        did not finish its second write)
//	reserved by h.Second                    reserved by h.Second alone (the
//	                                        source's DEL of a migration that
//	                                        did not finish its second write)
//	anything else, or not reserved          stale: the record holds nothing
//
// Where the judged record names other containers than the written one (a
// transition stopped between its writes), SettleHold writes it.
func judgeHold(id string, h Hold, owner Attachment, exists bool) (Hold, string) {
	switch {
	case !exists:
		return h, "its address is not reserved"
	case owner == HoldOwner(id):
		h.Owner, h.Node = "", ""
		return h.WithoutSecond(), ""
	case owner.IfName != h.IfName || (h.Network != "" && owner.Network != "" && owner.Network != h.Network):
	case h.Owner != "" && owner.ContainerID == h.Owner:
		return h, ""
	case h.Second != "" && owner.ContainerID == h.Second:
		return h.HandedOver(), ""
	case h.Owner == "" && h.LastOwner != "" && owner.ContainerID == h.LastOwner:
		h.Owner = h.LastOwner
		return h, ""
	}
	return h, "its address is owned by " + describeOwner(owner)
}

// VersionedHold is judgeHold for a store that writes a hold in one
// step with its address's claim and versions every write (etcd's mod
// revisions): record h (ok: it decodes) at version pins its address, and
// a share is still one, only while the address's claim is the one written
// with it, at that version (claim, 0 for none). nil: it pins nothing.
func VersionedHold(h Hold, ok bool, version, claim int64) *HoldRecord {
	if !ok || claim != version {
		return nil
	}
	return &HoldRecord{Hold: h}
}

func describeOwner(a Attachment) string {
	s := a.ContainerID
	if a.IfName != "" {
		s += "/" + a.IfName
	}
	return s
}

// LookupHold returns record id judged; nil when there is none.
func LookupHold(r HoldReader, id string) (*HoldRecord, error) {
	h, err := r.ReadHold(id)
	if errors.Is(err, ErrHoldUnreadable) {
		return &HoldRecord{ID: id, Stale: "it does not decode"}, nil
	}
	if err != nil || h == nil {
		return nil, err
	}
	e := &HoldRecord{ID: id, Hold: *h, Written: *h}
	ip, err := netip.ParseAddr(h.Address)
	if err != nil || ip.Zone() != "" || ip.Is4In6() {
		e.Stale = "it names no address"
		return e, nil
	}
	e.Addr = ip
	owner, exists, err := r.Owner(ip)
	if err != nil {
		return nil, err
	}
	e.Hold, e.Stale = judgeHold(id, *h, owner, exists)
	return e, nil
}

// ListHolds judges every record, sorted by ID.
func ListHolds(r HoldReader) ([]HoldRecord, error) {
	ids, err := r.HoldIDs()
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	out := make([]HoldRecord, 0, len(ids))
	for _, id := range ids {
		e, err := LookupHold(r, id)
		if err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, *e)
		}
	}
	return out, nil
}

// Keyed reports a record of a reservation (not a hold) of attachment a.
func (e HoldRecord) Keyed(a Attachment) bool {
	return e.Stale == "" && !e.Held() && e.Owner == a.ContainerID && e.IfName == a.IfName
}

// SecondOf reports a record whose migration target is attachment a.
func (e HoldRecord) SecondOf(a Attachment) bool {
	return e.Stale == "" && !e.Held() && e.Second == a.ContainerID && e.IfName == a.IfName
}

// secondAtt is the migration target of e as an attachment.
func (e HoldRecord) secondAtt(owner Attachment) Attachment {
	return Attachment{ContainerID: e.Second, IfName: e.IfName, Network: owner.Network}
}

// SecondsOf lists the records whose migration target a is.
func SecondsOf(r HoldReader, a Attachment) ([]HoldRecord, error) {
	return holdsWhere(r, func(e HoldRecord) bool { return e.SecondOf(a) })
}

// KeyedOf lists the records of a's reservations: how DEL, GC and an
// operator's release find what a key holds through its attachment.
func KeyedOf(r HoldReader, a Attachment) ([]HoldRecord, error) {
	return holdsWhere(r, func(e HoldRecord) bool { return e.Keyed(a) })
}

// holdsWhere lists the judged records that match.
func holdsWhere(r HoldReader, match func(HoldRecord) bool) ([]HoldRecord, error) {
	all, err := ListHolds(r)
	var out []HoldRecord
	for _, e := range all {
		if match(e) {
			out = append(out, e)
		}
	}
	return out, err
}
