package hostlocal

import (
	"sync/atomic"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Faults stops a command's writes part-way, as kill -9 stops a plugin
// between two of them: the first After writes of the Disks that share it go
// through and every later one fails, while reads go on (they cost a
// killed process nothing it leaves behind). It is how the store contract
// builds each state a crash can leave, step by step, through the real
// commands. A nil *Faults never stops a write.
type Faults struct {
	After int
	done  atomic.Int64
}

// errCrashed is what a write after the crash gets.
var errCrashed = cnierr.New(cnierr.CodeTryAgainLater, "the write was stopped (a simulated crash)", "")

// step is one write: nil when it may happen.
func (f *Faults) step() error {
	if f == nil || f.done.Add(1) <= int64(f.After) {
		return nil
	}
	return errCrashed
}

// SetFaults makes d's writes steps of f.
func (d *Disk) SetFaults(f *Faults) { d.faults = f }
