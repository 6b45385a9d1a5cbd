package alloctest

import "github.com/cniplugins/cniplugins/internal/alloc"

// Crashable is a Subject whose next command can be stopped part-way, as
// kill -9 stops a plugin between two writes: the contract's crash rows
// construct each state a crash can leave, step by step, and hold every
// store to what the commands that follow make of it.
type Crashable interface {
	Subject
	Crasher
}

// Crasher is how a store's subject stops its next command: its
// CNI.Command then gives that command a store whose steps stop.
type Crasher interface {
	// CrashAfter stops the next command for good after its first n steps
	// (a write of the store; for etcd a request): every later step fails,
	// and so does the command. The command after it runs whole.
	CrashAfter(n int)
	// Holds returns every hold record as the store keeps it, not judged:
	// what a crash left is there, whatever the engine makes of it.
	Holds() ([]alloc.Hold, error)
}

// WithCrashes is s, Crashable through c.
func WithCrashes(s CNI, c Crasher) Crashable {
	return struct {
		CNI
		Crasher
	}{s, c}
}
