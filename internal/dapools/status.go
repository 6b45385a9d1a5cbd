package dapools

import (
	"slices"

	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdStatus reads which range sets or pools of this network are
// exhausted (an ADD found them full and nothing has been released there
// since) and answers alloc's verdict: 50 only when no ADD could be
// served. The rule needs no scan: the exhaustion marks live beside the
// index and are trusted only while the index is (another writer's
// release invalidates them).
func cmdStatus(req *plugin.Request) error {
	c, targets, err := load(req)
	if err != nil {
		return err
	}
	full := make([]bool, len(targets))
	for i, t := range targets {
		marks, err := hostlocal.Exhausted(c.dir(t.Scope))
		if err != nil {
			return err
		}
		full[i] = slices.Contains(marks, t.RangeID)
	}
	return c.Status(req.Conf, targets, full)
}
