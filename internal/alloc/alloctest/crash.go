package alloctest

import (
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Crashable is a Subject whose next command can be stopped part-way, as
// kill -9 stops a plugin between two writes: the contract's crash rows
// construct each state a crash can leave, step by step, and hold every
// store to what the commands that follow make of it.
type Crashable interface {
	Subject
	// CrashAfter stops the next command for good after its first n steps
	// (a write of the store; for etcd a request): every later step fails,
	// and so does the command. The command after it runs whole.
	CrashAfter(n int)
	// Holds returns every hold record as the store keeps it, not judged:
	// what a crash left is there, whatever the engine makes of it.
	Holds() ([]alloc.Hold, error)
}

// errCrashed is what a step after the crash gets.
var errCrashed = cnierr.New(cnierr.CodeTryAgainLater, "the contract stopped this command (a crash)", "")

// crashPlan is an Engine's pending crash: armed for the next command,
// with the steps it may still take.
type crashPlan struct {
	armed bool
	left  int
}

// step reports whether the command may take one more step.
func (p *crashPlan) step() error {
	if p.left == 0 {
		return errCrashed
	}
	p.left--
	return nil
}

// crashStore is a Store whose writes stop after the plan's steps; reads
// go on, as they cost a killed process nothing it leaves behind.
type crashStore struct {
	Store
	plan *crashPlan
}

// then makes write the command's next step, unless the crash came.
func (c crashStore) then(write func() error) error {
	if err := c.plan.step(); err != nil {
		return err
	}
	return write()
}

func (c crashStore) Reserve(a alloc.Attachment, ip netip.Addr) (ok bool, err error) {
	err = c.then(func() (err error) { ok, err = c.Store.Reserve(a, ip); return err })
	return ok, err
}

func (c crashStore) Release(a alloc.Attachment, ip netip.Addr) (ok bool, err error) {
	err = c.then(func() (err error) { ok, err = c.Store.Release(a, ip); return err })
	return ok, err
}

func (c crashStore) SetLastReserved(rangeID int, ip netip.Addr) error {
	return c.then(func() error { return c.Store.SetLastReserved(rangeID, ip) })
}

func (c crashStore) MarkExhausted(rangeID int) error {
	return c.then(func() error { return c.Store.MarkExhausted(rangeID) })
}

func (c crashStore) ClearExhausted() error { return c.then(c.Store.ClearExhausted) }

func (c crashStore) WriteHold(id string, h alloc.Hold) error {
	return c.then(func() error { return c.Store.WriteHold(id, h) })
}

func (c crashStore) RemoveHold(id string) error {
	return c.then(func() error { return c.Store.RemoveHold(id) })
}

func (c crashStore) Reassign(ip netip.Addr, from, to alloc.Attachment) error {
	return c.then(func() error { return c.Store.Reassign(ip, from, to) })
}

// CrashAfter implements Crashable.
func (e Engine) CrashAfter(n int) { *e.crash = crashPlan{armed: true, left: n} }

// Holds implements Crashable.
func (e Engine) Holds() ([]alloc.Hold, error) {
	var out []alloc.Hold
	err := e.with(func(l Store) error {
		ids, err := l.HoldIDs()
		for i := 0; err == nil && i < len(ids); i++ {
			var h *alloc.Hold
			if h, err = l.ReadHold(ids[i]); h != nil {
				out = append(out, *h)
			}
		}
		return err
	})
	return out, err
}
