package ops

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// Lease is one reservation as `cniplugins leases` reports it; its JSON
// form is the documented schema (docs/cli.md).
type Lease struct {
	Address string `json:"address"`
	// Network is the network directory's name, or for a pool reservation
	// the network recorded in it.
	Network     string    `json:"network"`
	Pool        string    `json:"pool"`
	ContainerID string    `json:"containerID"`
	IfName      string    `json:"ifname"`
	Owner       string    `json:"owner"` // "cni", "legacy", "invalid", "sticky", "marker" (--etcd) or another kind
	Since       time.Time `json:"since"`
	// Node and NodeSeen: only a shared Backend (--etcd) records them.
	Node     string    `json:"node,omitempty"`
	NodeSeen time.Time `json:"nodeSeen,omitzero"`
	Problem  string    `json:"problem"` // why the file is no well-formed reservation; fsck reports the same
	// A sticky key's record: local state also names the key of an
	// address a container has (ContainerID set); a held address there
	// has ContainerID "" and the key's interface as IfName.
	StickyKey   string    `json:"stickyKey,omitempty"`
	HoldExpires time.Time `json:"holdExpires,omitzero"`
	LastOwner   string    `json:"lastOwner,omitempty"`
	// SecondOwner is a KubeVirt live migration's target, which shares the
	// address with ContainerID while both run.
	SecondOwner     string `json:"secondOwner,omitempty"`
	SecondMigration string `json:"secondMigration,omitempty"`
	Tenant          string `json:"tenant,omitempty"`
}

// LeaseFilter narrows a listing; empty fields match everything. Every
// Backend's Leases selects and orders through Select, so that a listing
// means the same of the data dir and of etcd.
type LeaseFilter struct {
	Network   string
	Pool      string
	Container string // a container ID or a prefix of one
	Node      string // a shared Backend's only: this host's claims
}

// Select is what f selects of ls, sorted (SortLeases). A hold is found by
// the container that last had it: the one an operator looks for when a
// pod is gone and its address is not free.
func (f LeaseFilter) Select(ls []Lease) []Lease {
	ls = slices.DeleteFunc(ls, func(l Lease) bool {
		container := l.ContainerID
		if l.Held() {
			container = l.LastOwner
		}
		return !(f.Node == "" || l.Node == f.Node) || !(f.Network == "" || l.Network == f.Network) ||
			!(f.Pool == "" || l.Pool == f.Pool) || !strings.HasPrefix(container, f.Container)
	})
	SortLeases(ls)
	return ls
}

// SortLeases sorts by node, then scope (networks before pools, each by
// name), then address (a marker, which has none, first).
func SortLeases(ls []Lease) {
	slices.SortStableFunc(ls, func(x, y Lease) int {
		a, _ := netip.ParseAddr(x.Address)
		b, _ := netip.ParseAddr(y.Address)
		return cmp.Or(strings.Compare(x.Node, y.Node), strings.Compare(x.scope(), y.scope()), a.Compare(b))
	})
}

// scope is l's scope's alloc.Scope.Path: networks sort before pools.
func (l Lease) scope() string { return alloc.Scope{Pool: l.Pool, Network: l.Network}.Path() }

// Held is whether l is an address a sticky key holds: no container has
// it, LastOwner had it last.
func (l Lease) Held() bool { return l.ContainerID == "" && l.StickyKey != "" }

// Leases lists the reservations under the data dir that f selects. The
// directories f names alone are read; a data dir's are this host's, of
// no node.
func (b Local) Leases(f LeaseFilter) ([]Lease, error) {
	dirs, err := StateDirs(b.DataDir)
	if err != nil {
		return nil, err
	}
	out := []Lease{}
	for _, d := range dirs {
		if f.Pool != "" && d.Pool != f.Pool || f.Network != "" && d.Pool == "" && d.Network != f.Network {
			continue
		}
		ls, _, err := readLeases(d)
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
	}
	f.Node = ""
	return f.Select(out), nil
}

// readLeases reads d's reservations without the lock, as leases with
// what sticky keys' records say, and as the engine's GC reads them.
func readLeases(d StateScope) ([]Lease, alloc.GCView, error) {
	v := alloc.GCView{Owners: map[netip.Addr]alloc.Attachment{}}
	rs, err := hostlocal.ReadReservations(d.Dir)
	if err != nil {
		return nil, v, err
	}
	if v.Holds, err = alloc.ListHolds(hostlocal.Reader(d.Dir)); err != nil {
		return nil, v, err
	}
	tenants, err := hostlocal.ReadTenants(d.Dir, hostlocal.Addrs(rs))
	if err != nil {
		return nil, v, err
	}
	holds := validHolds(v.Holds)
	ls := make([]Lease, len(rs))
	for i, r := range rs {
		ls[i] = leaseOf(d.Scope, r, holds[r.Addr])
		ls[i].Tenant = tenants[r.Addr]
		v.Owners[r.Addr] = r.Owner
	}
	return ls, v, nil
}

// leaseOf is r, a reservation of scope d, with what its sticky key's
// record e (nil: none) says.
func leaseOf(d alloc.Scope, r hostlocal.Reservation, e *alloc.HoldRecord) Lease {
	l := Lease{ // a network directory's reservations are its network's; a pool's record theirs
		Address: r.Addr.String(), Network: cmp.Or(d.Network, r.Owner.Network), ContainerID: r.Owner.ContainerID,
		IfName: r.Owner.IfName, Owner: r.Owner.Kind(), Since: r.Since.UTC(), Problem: r.Problem, Pool: d.Pool,
	}
	if r.Problem != "" {
		l.Owner = "invalid"
	}
	if e == nil {
		return l
	}
	l.StickyKey, l.LastOwner, l.SecondOwner, l.SecondMigration = e.Key, e.LastOwner, e.Second, e.SecondMigration
	if e.Held() {
		// A reservation's record may keep the expiry of the hold it took
		// over (for a take-over a crash interrupts): not this lease's.
		l.HoldExpires = e.Expires.UTC()
		if l.Owner == "sticky" {
			l.ContainerID, l.IfName, l.Network = "", e.IfName, cmp.Or(l.Network, e.Network)
		}
	}
	return l
}

// validHolds maps the addresses that sticky keys keep to their records.
func validHolds(hs []alloc.HoldRecord) map[netip.Addr]*alloc.HoldRecord {
	out := map[netip.Addr]*alloc.HoldRecord{}
	for i, e := range hs {
		if e.Stale == "" {
			out[e.Addr] = &hs[i]
		}
	}
	return out
}

// Describe is l in one line for release and gc reports, printable.
func (l Lease) Describe() string {
	where := "network " + l.Network
	if l.Pool != "" {
		where = "pool " + l.Pool
		if l.Network != "" {
			where += ", network " + l.Network
		}
	}
	who := "container " + l.ContainerID
	if l.Held() {
		who = "held, last container " + l.LastOwner
	}
	if l.IfName != "" {
		who += " ifname " + l.IfName
	}
	if l.StickyKey != "" {
		who += ", sticky key " + l.StickyKey
	}
	if l.SecondOwner != "" {
		who += ", shared with migration target " + l.SecondOwner
	}
	if l.Node != "" {
		who = "node " + l.Node + ", " + who
	}
	addr := cmp.Or(l.Address, "(no address)") // a shared Backend's marker has none
	return Printable(fmt.Sprintf("%s (%s, %s, owner %s)", addr, where, who, l.Owner))
}

// Printable replaces what is not a printable character (control
// characters, invalid UTF-8) with '?'.
func Printable(s string) string {
	bad := func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }
	if strings.IndexFunc(s, bad) < 0 {
		return s // the common case, without a copy
	}
	return strings.Map(func(r rune) rune {
		if bad(r) {
			return '?'
		}
		return r
	}, s)
}
