package alloctest

import (
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

// Spills implements alloc.SpillRecorder.
func (m *MemStore) Spills() ([]alloc.Attachment, error) {
	var out []alloc.Attachment
	for a, network := range m.spills {
		a.Network = network
		out = append(out, a)
	}
	return out, nil
}
