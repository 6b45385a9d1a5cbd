package alloctest

import "github.com/cniplugins/cniplugins/internal/cnierr"

// Faults stops a command's writes to MemStores part-way, as kill -9
// stops a plugin between two of them (the in-memory twin of the disk
// store's hostlocal.Faults): the first After writes of the MemStores
// that share it go through and every later one fails, while reads go
// on. A nil *Faults never stops a write.
type Faults struct {
	After int
	done  int
}

// errCrashed is what a write after the crash gets.
var errCrashed = cnierr.New(cnierr.CodeTryAgainLater, "the write was stopped (a simulated crash)", "")

// step is one write: nil when it may happen.
func (f *Faults) step() error {
	if f == nil {
		return nil
	}
	if f.done++; f.done <= f.After {
		return nil
	}
	return errCrashed
}

// SetFaults makes m's writes steps of f (nil: none stops).
func (m *MemStore) SetFaults(f *Faults) { m.faults = f }
