package alloctest

import (
	"errors"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Engine is the Subject of a Lister driven by the engine's functions, as
// ipam-da-pools drives its state directories: Open gives the store for
// one command and the function that ends it (a disk store's Close).
type Engine struct {
	Open func() (alloc.Lister, func() error, error)
}

// Mem is the Engine over one MemStore.
func Mem() Engine {
	m := NewMemStore()
	return Engine{Open: func() (alloc.Lister, func() error, error) { return m, func() error { return nil }, nil }}
}

func (e Engine) with(f func(alloc.Lister) error) error {
	l, done, err := e.Open()
	if err != nil {
		return err
	}
	return errors.Join(f(l), done())
}

// Add implements Subject.
func (e Engine) Add(c Call, targets []alloc.Target) ([]netip.Prefix, error) {
	var out []netip.Prefix
	err := e.with(func(l alloc.Lister) error {
		for _, t := range targets {
			p, _, err := t.Allocator(l).Allocate(c.Att, t.RangeID, t.Set, t.Requested, t.Label)
			if err != nil {
				reserved := make([]netip.Addr, len(out))
				for i, p := range out {
					reserved[i] = p.Addr()
				}
				out = nil
				return errors.Join(err, alloc.Rollback(l, c.Att, reserved))
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Del implements Subject.
func (e Engine) Del(c Call, hints []netip.Addr) error {
	return e.with(func(l alloc.Lister) error {
		_, err := alloc.Release(l, c.Att, hints)
		return err
	})
}

// Check implements Subject; without addresses the attachment must own
// one.
func (e Engine) Check(c Call, ips []netip.Addr) error {
	return e.with(func(l alloc.Lister) error {
		if len(ips) > 0 {
			return alloc.Check(l, c.Att, ips)
		}
		owns, err := alloc.HoldsAny(l, c.Att)
		if err == nil && !owns {
			return cnierr.New(cnierr.CodeUnknownContainer, "attachment owns no address", "containerID=%s", c.Att.ContainerID)
		}
		return err
	})
}

// GC implements Subject.
func (e Engine) GC(live []alloc.Attachment, _ time.Time) error {
	return e.with(func(l alloc.Lister) error {
		_, err := alloc.GC(l, alloc.NewKeepSet("net", live).Keeps)
		return err
	})
}
