package alloc

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Sticky addresses: an attachment with a stable key (a StatefulSet pod's
// namespace/name, a VM's own ID) gets the same address back whatever its
// container ID, on any node the store is shared with. What a key holds is
// a Hold, one per scope (network or pool) and interface; the rules here
// are the same for every store, the stores keep the records.
//
//	ADD, key K:  K's hold reserved by another container ID  → 105
//	             K's hold reserved or held                    → that address
//	             no hold (or it expired)                      → allocate, then record it
//	             K's hold reserved by one live owner, the ADD a
//	             migration target (Keyed.Migration other than the owner's) → that
//	             address, shared: the record's second owner; never a third
//	             a migration target whose K holds no address             → 107
//	DEL:         the reservation becomes a hold until now + holdFor; the
//	             owner's with a second owner hands it over; the second
//	             owner's ends its share
//	GC:          frees holds past their expiry, whatever the attachments say

// Where a key comes from, in ipam.sticky.by.
const (
	StickyByPod        = "pod"        // K8S_POD_NAMESPACE/K8S_POD_NAME
	StickyByAnnotation = "annotation" // the pod annotation cniplugins.io/sticky-key
	StickyByArg        = "arg"        // CNI_ARGS CNIPLUGINS_STICKY_KEY
	StickyByKubevirt   = "kubevirt"   // K8S_POD_NAMESPACE and the annotation kubevirt.io/domain

	ArgStickyKey        = "CNIPLUGINS_STICKY_KEY"
	AnnotationStickyKey = "cniplugins.io/sticky-key"
	// AnnotationKubevirtDomain is the VMI's name on each of its
	// virt-launcher pods; AnnotationMigrationJob the migration a target
	// pod was started for (a pod keeps it after the migration).
	AnnotationKubevirtDomain = "kubevirt.io/domain"
	AnnotationMigrationJob   = "kubevirt.io/migrationJobName"

	// DefaultHoldFor is how long a DEL'd key keeps its address when
	// ipam.sticky.holdFor is not given.
	DefaultHoldFor = 30 * time.Minute
)

// StickyKeys is ipam.sticky as written.
type StickyKeys struct {
	By      []string `json:"by"`
	HoldFor string   `json:"holdFor"`
}

// Sticky is ipam.sticky validated. HoldFor 0 means until an operator
// releases the hold.
type Sticky struct {
	By      []string
	HoldFor time.Duration
	// NamespaceFrom is ipam.namespaceFrom: which runtime's namespace key
	// the sources of By read (netconf.IdentityOf), as a selector's rules
	// do, so that a standalone allocator trusts no more than a chain.
	NamespaceFrom string
}

// ParseSticky validates ipam.sticky; nil is sticky off (a selector may
// still pass a key, which then holds for DefaultHoldFor).
func ParseSticky(k *StickyKeys) (Sticky, error) {
	s := Sticky{HoldFor: DefaultHoldFor}
	if k == nil {
		return s, nil
	}
	// An empty by takes keys from a selector alone (ipam-ds-args rules
	// with "sticky": true), with this holdFor.
	for i, by := range k.By {
		switch by {
		case StickyByPod, StickyByAnnotation, StickyByArg, StickyByKubevirt:
		default:
			return s, cnierr.InvalidConfig(fmt.Sprintf("ipam.sticky.by[%d]", i), by, `must be "pod", "annotation", "arg" or "kubevirt"`)
		}
	}
	s.By = k.By
	if k.HoldFor != "" {
		d, err := time.ParseDuration(k.HoldFor)
		if k.HoldFor == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return s, cnierr.InvalidConfig("ipam.sticky.holdFor", k.HoldFor, `must be a duration like "30m", or "0" for until released`)
		}
		s.HoldFor = d
	}
	return s, nil
}

// ScopeStickyKey is an author-chosen key as it holds: within namespace ns
// when the runtime passed one, so that a pod or job presenting another
// namespace's key gets a key of its own namespace, never the other's
// address. The scoped form is "<ns>/<key>"; a key that already starts with
// "<ns>/" is in that form (the pod key, and keys written the way the
// documentation asked before keys were scoped, keep their holds). Without
// a namespace (podman, Nomad without one) the key is as written.
func ScopeStickyKey(ns, key string) string {
	if ns == "" || strings.HasPrefix(key, ns+"/") {
		return key
	}
	return ns + "/" + key
}

// KubevirtKey is a KubeVirt VM's key, "<namespace>/vm/<domain>": every
// virt-launcher pod of the VM carries its domain (the VMI's name), and
// the runtime vouches for the namespace. A pod name has no '/', so no
// pod's "<namespace>/<podName>" is ever a VM's key. "" without either.
func KubevirtKey(namespace string, annotations map[string]string) string {
	domain := annotations[AnnotationKubevirtDomain]
	if namespace == "" || domain == "" {
		return ""
	}
	return namespace + "/vm/" + domain
}

// StickyID names a key's hold for one interface where stores need a name
// (a file, a key segment): a hash, so that no key can reach outside its
// place, of fixed length. It is FNV-128a, not a cryptographic hash: the
// lean binary links no crypto (the standard library's SHA-256 brings 28
// packages of FIPS module whose initialisation every exec of every
// personality would pay). A key crafted to collide with another finds a
// record that is not its own; stores compare the record's key and
// interface (Hold.For) and refuse it (StickyCollision), so a collision
// costs the crafted key its stickiness, never another key's address.
func StickyID(key, ifname string) string {
	h := fnv.New128a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(ifname))
	return hex.EncodeToString(h.Sum(nil))
}

// StickyCollision is the error for a key whose StickyID names another
// key's hold.
func StickyCollision(key, ifname string, other Hold) error {
	return cnierr.New(cnierr.CodeInvalidConfig, "sticky key collides with another key's hold",
		"key=%q ifname=%s: its hold record belongs to key %q ifname %s (hashes collide); choose another key", key, ifname, other.Key, other.IfName)
}

// Hold is what a sticky key holds in one scope for one interface: the
// one record every store keeps (a file on local state, a hold key and a
// held claim in etcd), encoded by AppendJSON. Its first fields name the
// owner and the address, so that a store can compare a value with an
// owner's first fields without reading it.
type Hold struct {
	// Node and Owner are the attachment that has the address (Node only
	// where holds are shared by nodes: a container ID is unique per node);
	// both "" while the address is held for the key (after a DEL).
	Node    string `json:"node,omitempty"`
	Owner   string `json:"owner,omitempty"`
	IfName  string `json:"ifname"`
	Network string `json:"network"`
	Address string `json:"address"`
	// SecondNode, Second and SecondMigration are a live migration's
	// target: a second attachment (same interface and network) that
	// shares the owner's address while both run, with the migration it
	// was started for. Never more than two: a record has one Second. They
	// follow the address, so that a record with a second owner never
	// begins as one without (a store compares prefixes).
	SecondNode      string `json:"secondNode,omitempty"`
	Second          string `json:"second,omitempty"`
	SecondMigration string `json:"secondMigration,omitempty"`
	Key             string `json:"key"`
	// HoldFor is ipam.sticky.holdFor at the ADD that reserved the address
	// (time.Duration's String, "0s" for until released; "" in records
	// without it: DefaultHoldFor). The record carries its own policy so
	// that every release (DEL, GC, an operator's gc or release, which has
	// no network config) holds for as long. It follows the key: a store
	// compares both as a prefix (etcd's DEL, planned with its own config's).
	HoldFor string `json:"holdFor,omitempty"`
	// LastOwner and LastNode are the last attachment that had it.
	LastOwner string `json:"lastOwner,omitempty"`
	LastNode  string `json:"lastNode,omitempty"`
	// Expires ends a hold (Owner ""); zero means until released.
	Expires time.Time `json:"expires,omitzero"`
	// Time is when the record was written, where a store keeps it (etcd).
	Time string `json:"time,omitempty"`
	// Migration is the owner's migration name (Keyed.Migration) at its ADD.
	Migration string `json:"migration,omitempty"`
}

// For reports whether h is the hold of key on ifname (StickyID can
// collide).
func (h Hold) For(key, ifname string) bool { return h.Key == key && h.IfName == ifname }

// SecondIs reports that the migration target of h is container cid on
// node.
func (h Hold) SecondIs(node, cid string) bool {
	return h.Second != "" && h.Second == cid && h.SecondNode == node
}

// HandedOver is h once its owner has gone and its migration target owns
// the address alone: the target is the owner, with its migration name
// (the source of a next migration carries it), the source the last owner.
func (h Hold) HandedOver() Hold {
	h.LastOwner, h.LastNode = h.Owner, h.Node
	h.Owner, h.Node, h.Migration = h.Second, h.SecondNode, h.SecondMigration
	return h.WithoutSecond()
}

// SecondProblem says why h's migration target is not one any ADD writes
// ("" when it is, or h has none): fsck's check.
func (h Hold) SecondProblem() string {
	switch {
	case h.Second == "" || h.Held():
		return ""
	case h.Second == h.Owner && h.SecondNode == h.Node:
		return "names its owner as its migration target"
	}
	if p := (Attachment{ContainerID: h.Second, IfName: h.IfName}).Problem(); p != "" {
		return "names a migration target that " + p
	}
	return ""
}

// SharedWith is h once container cid on node, the target of migration
// mig, shares its owner's address (addSecond).
func (h Hold) SharedWith(node, cid, mig string) Hold {
	h.SecondNode, h.Second, h.SecondMigration = node, cid, mig
	return h
}

// WithoutSecond is h with no migration target.
func (h Hold) WithoutSecond() Hold {
	h.Second, h.SecondNode, h.SecondMigration = "", "", ""
	return h
}

// Held reports a hold with no reservation behind it.
func (h Hold) Held() bool { return h.Owner == "" }

// OwnedBy reports a reservation of container cid on node.
func (h Hold) OwnedBy(node, cid string) bool {
	return h.Owner != "" && h.Owner == cid && h.Node == node
}

// owner names the reservation's attachment in messages.
func (h Hold) owner() string {
	if h.Node != "" {
		return h.Node + "/" + h.Owner
	}
	return h.Owner
}

// second names the migration target in messages.
func (h Hold) second() string {
	if h.SecondNode != "" {
		return h.SecondNode + "/" + h.Second
	}
	return h.Second
}

// Expired reports a hold whose time is over at now.
func (h Hold) Expired(now time.Time) bool {
	return h.Held() && !h.Expires.IsZero() && !now.Before(h.Expires)
}

// HeldFrom is h held from now on: a reservation becomes a hold for its
// HoldFor, its owner the last one; a hold stays as it is (its expiry
// runs on).
func (h Hold) HeldFrom(now time.Time) Hold {
	if h.Held() {
		return h
	}
	h.LastOwner, h.LastNode, h.Owner, h.Node = h.Owner, h.Node, "", ""
	h.Expires = HoldExpiry(now, ParseHoldFor(h.HoldFor))
	return h
}

// ParseHoldFor reads a record's holdFor; "" or a malformed one (a record
// is not config: it is never refused) is DefaultHoldFor.
func ParseHoldFor(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return DefaultHoldFor
	}
	return d
}

// HoldExpiry is when a hold made at now for holdFor ends; zero (never)
// for holdFor 0. It is rounded up to the whole second, never down: records
// and listings show seconds, and a hold must last at least its holdFor.
func HoldExpiry(now time.Time, holdFor time.Duration) time.Time {
	if holdFor <= 0 {
		return time.Time{}
	}
	end := now.Add(holdFor).UTC()
	if whole := end.Truncate(time.Second); whole.Before(end) {
		return whole.Add(time.Second)
	}
	return end
}

// StickyAddr decides an ADD of container cid on node (node "" where
// holds are one node's) with the key's hold h (nil: none): the address to
// reserve again, or the zero Addr to allocate as usual. requested is the
// address asked for in this target, if any.
func StickyAddr(h *Hold, node, cid string, requested netip.Addr, now time.Time) (netip.Addr, error) {
	if h == nil || h.Expired(now) {
		return netip.Addr{}, nil
	}
	addr, err := netip.ParseAddr(h.Address)
	if err != nil {
		return netip.Addr{}, nil // a record without a usable address holds nothing
	}
	if !h.Held() && !h.OwnedBy(node, cid) {
		return netip.Addr{}, cnierr.New(cnierr.CodeStickyHeld, fmt.Sprintf("sticky key %s is held by live attachment %s", h.Key, h.owner()),
			"key=%q address=%s containerID=%s ifname=%s: the old attachment is not deleted yet; retry", h.Key, addr, h.owner(), h.IfName)
	}
	if requested.IsValid() && requested != addr {
		return netip.Addr{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address differs from the sticky key's",
			"requested=%s key=%q holds %s", requested, h.Key, addr)
	}
	return addr, nil
}
