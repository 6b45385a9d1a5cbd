package hostlocal

import (
	"sync"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Faults stops a command's writes part-way, as kill -9 stops a plugin
// between two of them: the first n writes of the Disks that share it go
// through and every later one fails, while reads go on (they cost a
// killed process nothing it leaves behind). It is how the store contract
// builds each state a crash can leave, step by step, through the real
// commands. A nil *Faults never stops a write.
type Faults struct {
	mu   sync.Mutex
	left int
}

// CrashAfter is the Faults of one command that crashes after n writes.
func CrashAfter(n int) *Faults { return &Faults{left: n} }

// errCrashed is what a write after the crash gets.
var errCrashed = cnierr.New(cnierr.CodeTryAgainLater, "the write was stopped (a simulated crash)", "")

// step is one write: nil when it may happen.
func (f *Faults) step() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.left == 0 {
		return errCrashed
	}
	f.left--
	return nil
}

// SetFaults makes d's writes steps of f.
func (d *Disk) SetFaults(f *Faults) { d.faults = f }
