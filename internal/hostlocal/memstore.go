package hostlocal

import (
	"maps"
	"net/netip"
	"slices"
)

// MemStore is an in-memory Store for unit tests of this package and of its
// callers. It scans its map where the disk store uses an index; it is a
// fake, not a cache.
type MemStore struct {
	res       map[netip.Addr]Attachment
	last      map[int]netip.Addr
	exhausted map[int]bool
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{res: map[netip.Addr]Attachment{}, last: map[int]netip.Addr{}, exhausted: map[int]bool{}}
}

// Reserve implements Store.
func (m *MemStore) Reserve(a Attachment, ip netip.Addr) (bool, error) {
	if _, taken := m.res[ip]; taken {
		return false, nil
	}
	m.res[ip] = a
	return true, nil
}

// Owner implements Store.
func (m *MemStore) Owner(ip netip.Addr) (Attachment, bool, error) {
	a, ok := m.res[ip]
	return a, ok, nil
}

// Release implements Store.
func (m *MemStore) Release(a Attachment, ip netip.Addr) (bool, error) {
	if owner, ok := m.res[ip]; !ok || !a.Holds(owner) {
		return false, nil
	}
	delete(m.res, ip)
	return true, nil
}

// ByAttachment implements Store.
func (m *MemStore) ByAttachment(a Attachment) ([]netip.Addr, error) {
	var out []netip.Addr
	for ip, owner := range m.res {
		if owner.Is(a) {
			out = append(out, ip)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out, nil
}

// All implements Store.
func (m *MemStore) All() (map[netip.Addr]Attachment, error) { return maps.Clone(m.res), nil }

// LastReserved implements Store.
func (m *MemStore) LastReserved(rangeID int) (netip.Addr, error) { return m.last[rangeID], nil }

// SetLastReserved implements Store.
func (m *MemStore) SetLastReserved(rangeID int, ip netip.Addr) error {
	m.last[rangeID] = ip
	return nil
}

// MarkExhausted implements Store.
func (m *MemStore) MarkExhausted(rangeID int) error {
	m.exhausted[rangeID] = true
	return nil
}

// ClearExhausted implements Store.
func (m *MemStore) ClearExhausted() error {
	clear(m.exhausted)
	return nil
}

// Exhausted returns the marked range-set IDs in ascending order, the
// MemStore counterpart of the package-level Exhausted.
func (m *MemStore) Exhausted() []int { return slices.Sorted(maps.Keys(m.exhausted)) }
