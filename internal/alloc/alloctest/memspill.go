package alloctest

import (
	"maps"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

var _ alloc.SpillRecorder = (*MemStore)(nil)

// A MemStore keeps a spill record per attachment (its container and
// interface, with its network), as the disk store keeps one file named
// by them: a record says the attachment may hold an address further
// down the chain this store heads. Writing or removing one is no step of
// Faults, as on disk.

// MaySpill implements alloc.SpillRecorder.
func (m *MemStore) MaySpill(a alloc.Attachment) (bool, error) {
	_, ok := m.spills[a.Key()]
	return ok, nil
}

// RecordSpill implements alloc.SpillRecorder.
func (m *MemStore) RecordSpill(a alloc.Attachment) error {
	m.spills[a.Key()] = a.Network
	return nil
}

// ForgetSpill implements alloc.SpillRecorder.
func (m *MemStore) ForgetSpill(a alloc.Attachment) error {
	delete(m.spills, a.Key())
	return nil
}

// GCSpills removes the records of attachments keep does not keep (GC's
// rule for reservations, as the disk store's GCSpills applies it) and
// returns how many it removed.
func (m *MemStore) GCSpills(keep func(alloc.Attachment) bool) int {
	n := 0
	for _, a := range slices.Collect(maps.Keys(m.spills)) {
		if a.Network = m.spills[a]; !keep(a) {
			delete(m.spills, a.Key())
			n++
		}
	}
	return n
}
