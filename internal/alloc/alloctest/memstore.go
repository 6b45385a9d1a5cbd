// Package alloctest holds an in-memory store for the tests of the
// allocation engine and of its callers, an allocator over it, and the
// contract every store passes through its allocator's commands.
package alloctest

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// MemStore is an in-memory alloc.Lister and alloc.HoldStore, and the
// store of one pool as an ADD locks it (alloc.LockedPool: its chain's
// spill records, a cursor an undone ADD puts back). It scans its map
// where the disk store uses an index; it is a fake, not a cache. Its
// writes are the steps a Faults counts, the disk store's writes.
type MemStore struct {
	res       map[netip.Addr]alloc.Attachment
	last      map[int]netip.Addr
	exhausted map[int]bool
	holds     map[string]alloc.Hold
	tenantOf  map[netip.Addr]string // the quota's tenant of each address
	tenant    string                // ForTenant's
	spills    map[alloc.Attachment]string
	faults    *Faults
}

var (
	_ alloc.Lister      = (*MemStore)(nil)
	_ alloc.HoldStore   = (*MemStore)(nil)
	_ alloc.TenantStore = (*MemStore)(nil)
	_ alloc.LockedPool  = (*MemStore)(nil)
)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{res: map[netip.Addr]alloc.Attachment{}, last: map[int]netip.Addr{}, exhausted: map[int]bool{},
		holds: map[string]alloc.Hold{}, tenantOf: map[netip.Addr]string{}, spills: map[alloc.Attachment]string{}}
}

// ReadHold implements alloc.HoldReader.
func (m *MemStore) ReadHold(id string) (*alloc.Hold, error) {
	h, ok := m.holds[id]
	if !ok {
		return nil, nil
	}
	return &h, nil
}

// HoldIDs implements alloc.HoldReader.
func (m *MemStore) HoldIDs() ([]string, error) { return slices.Collect(maps.Keys(m.holds)), nil }

// WriteHold implements alloc.HoldStore.
func (m *MemStore) WriteHold(id string, h alloc.Hold) error {
	if err := m.faults.step(); err != nil {
		return err
	}
	m.holds[id] = h
	return nil
}

// RemoveHold implements alloc.HoldStore.
func (m *MemStore) RemoveHold(id string) error {
	if err := m.faults.step(); err != nil {
		return err
	}
	delete(m.holds, id)
	return nil
}

// Reassign implements alloc.HoldStore.
func (m *MemStore) Reassign(ip netip.Addr, from, to alloc.Attachment) error {
	if err := m.faults.step(); err != nil {
		return err
	}
	if owner, ok := m.res[ip]; ok && owner == from {
		m.res[ip] = to
	}
	return nil
}

// Reserve implements alloc.Store.
func (m *MemStore) Reserve(a alloc.Attachment, ip netip.Addr) (bool, error) {
	if err := m.faults.step(); err != nil {
		return false, err
	}
	if _, taken := m.res[ip]; taken {
		return false, nil
	}
	m.res[ip] = a
	if m.tenant != "" {
		m.tenantOf[ip] = m.tenant
	}
	return true, nil
}

// ForTenant implements alloc.TenantStore.
func (m *MemStore) ForTenant(tenant string) { m.tenant = tenant }

// TenantAddrs implements alloc.TenantStore.
func (m *MemStore) TenantAddrs(tenant string) (int, error) {
	n := 0
	for _, t := range m.tenantOf {
		if t == tenant {
			n++
		}
	}
	return n, nil
}

// Owner implements alloc.Ledger.
func (m *MemStore) Owner(ip netip.Addr) (alloc.Attachment, bool, error) {
	a, ok := m.res[ip]
	return a, ok, nil
}

// Release implements alloc.Ledger.
func (m *MemStore) Release(a alloc.Attachment, ip netip.Addr) (bool, error) {
	if err := m.faults.step(); err != nil {
		return false, err
	}
	if owner, ok := m.res[ip]; !ok || !a.Owns(owner) {
		return false, nil
	}
	delete(m.res, ip)
	delete(m.tenantOf, ip)
	return true, nil
}

// ByAttachment implements alloc.Ledger.
func (m *MemStore) ByAttachment(a alloc.Attachment) ([]netip.Addr, error) {
	var out []netip.Addr
	for ip, owner := range m.res {
		if owner.Is(a) {
			out = append(out, ip)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out, nil
}

// All implements alloc.Lister.
func (m *MemStore) All() (map[netip.Addr]alloc.Attachment, error) { return maps.Clone(m.res), nil }

// LastReserved implements alloc.Store.
func (m *MemStore) LastReserved(rangeID int) (netip.Addr, error) { return m.last[rangeID], nil }

// SetLastReserved implements alloc.Ledger.
func (m *MemStore) SetLastReserved(rangeID int, ip netip.Addr) error {
	if err := m.faults.step(); err != nil {
		return err
	}
	m.last[rangeID] = ip
	return nil
}

// KeepCursor implements alloc.CursorKeeper.
func (m *MemStore) KeepCursor(rangeID int) (func() error, error) {
	was, had := m.last[rangeID]
	return func() error {
		delete(m.last, rangeID)
		if had {
			m.last[rangeID] = was
		}
		return nil
	}, nil
}

// MarkExhausted implements alloc.Store.
func (m *MemStore) MarkExhausted(rangeID int) error {
	if err := m.faults.step(); err != nil {
		return err
	}
	m.exhausted[rangeID] = true
	return nil
}

// ClearExhausted implements alloc.Ledger.
func (m *MemStore) ClearExhausted() error {
	if err := m.faults.step(); err != nil {
		return err
	}
	clear(m.exhausted)
	return nil
}

// Exhausted returns the marked range-set IDs in ascending order, as the
// disk store's Exhausted reads them back.
func (m *MemStore) Exhausted() []int { return slices.Sorted(maps.Keys(m.exhausted)) }
