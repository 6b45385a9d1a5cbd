package dapools

import (
	"strings"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdAdd runs the engine's ADD over the state directories
// (alloc.LockedAdd decides which of them each try locks).
func (k commands) cmdAdd(req *plugin.Request) (types.Result, error) {
	c, err := k.parse(req, true)
	if err != nil {
		return nil, err
	}
	targets, err := c.AddTargets()
	if err != nil {
		return nil, err
	}
	warnUnusable(req.Log, targets)
	res, err := c.NewResult()
	if err != nil {
		return nil, err
	}
	add := alloc.LockedAdd{Add: alloc.Add{Targets: targets, Att: c.attachment(req), Quota: c.Quota, Keyed: c.keyed, Log: req.Log}, Now: req.Now}
	res.IPs, err = add.Run(func(tenant string, scopes []alloc.Scope) (alloc.Locked, func(), error) {
		p, err := c.lock(tenant, scopes)
		if err != nil {
			return nil, nil, err
		}
		return p, func() { p.closeLogged(req.Log) }, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
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
