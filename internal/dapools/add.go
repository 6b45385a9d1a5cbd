package dapools

import (
	"strings"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// Add runs the engine's ADD over the state directories
// (alloc.LockedAdd decides which of them each try locks).
func (c *config) Add(targets []alloc.Target, keyed alloc.Keyed) ([]*current.IPConfig, error) {
	warnUnusable(c.req.Log, targets)
	add := alloc.LockedAdd{Add: alloc.Add{Targets: targets, Att: c.att, Quota: c.Quota, Keyed: keyed, Log: c.req.Log}, Now: c.req.Now}
	return add.Run(func(tenant string, scopes []alloc.Scope) (alloc.Locked, func(), error) {
		p, err := c.lock(tenant, scopes)
		if err != nil {
			return nil, nil, err
		}
		return p, func() { p.closeLogged(c.req.Log) }, nil
	})
}

// warnUnusable tells the operator, once per ADD, about ranges whose
// config includes the network or IPv4 broadcast address: host-local hands
// them out, ipam-da-pools never does.
func warnUnusable(log *logging.Logger, targets []alloc.Target) {
	var notes []string
	for _, t := range targets {
		for _, r := range t.Set {
			if w := r.Warning(); w != "" {
				notes = append(notes, t.Label+": "+w)
			}
		}
	}
	if len(notes) > 0 {
		log.Warn("range includes an address that is never handed out", logging.String("ranges", strings.Join(notes, "; ")))
	}
}
