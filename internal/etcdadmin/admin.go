package etcdadmin

import (
	"fmt"
	"time"

	"github.com/cniplugins/cniplugins/internal/etcdstore"
)

// Admin reads and releases claims directly: the store's operator side,
// with the operators' rows, filters and order on top.
type Admin struct{ *etcdstore.Operator }

// Config is how an operator reaches etcd (etcdstore.Access). It is this
// package's own type so that it needs nothing of the operators'
// commands; the full flavour's main converts their flags.
type Config = etcdstore.Access

// New validates c exactly as ipam.etcd is validated.
func New(c Config) (*Admin, error) {
	st, err := etcdstore.OpenOperator(c)
	if err != nil {
		return nil, err
	}
	return &Admin{st}, nil
}

// CheckGone refuses to treat node as gone for good while it was seen alive
// within deadAfter: its runtime may still DEL and GC, and its live
// containers still use the addresses that an operator's GC would free.
func (a *Admin) CheckGone(node string, deadAfter time.Duration) error {
	nodes, err := a.Nodes()
	if err != nil {
		return err
	}
	now := a.Now()
	for _, n := range nodes {
		if n.Name == node && now.Sub(n.LastSeen) < deadAfter {
			return fmt.Errorf("node %s (host %q) was seen alive %s ago, less than --dead-after %s: it may still use its addresses; wait, or pass --force if it is gone for good",
				node, n.Hostname, now.Sub(n.LastSeen).Round(time.Second), deadAfter)
		}
	}
	return nil
}
