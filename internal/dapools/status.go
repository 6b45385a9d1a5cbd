package dapools

import (
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdStatus reads which range sets or pools of this network are
// exhausted (an ADD found them full and nothing has been released there
// since) and answers alloc's verdict: 50 only when no ADD could be
// served. The rule needs no scan: the exhaustion marks live beside the
// index and are trusted only while the index is (another writer's
// release invalidates them).
func (k commands) cmdStatus(req *plugin.Request) error {
	c, targets, err := k.load(req)
	if err != nil {
		return err
	}
	choices, err := ipamconf.Choices(req.Conf, c.Config)
	if err != nil {
		return err
	}
	return c.Status(targets, choices, func(p alloc.Target) (bool, error) {
		marks, err := hostlocal.Exhausted(c.dir(p.Scope))
		return slices.Contains(marks, p.RangeID), err
	})
}
