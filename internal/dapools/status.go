package dapools

import (
	"path/filepath"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdStatus answers 50 (plugin not available) while a range set or pool
// this network allocates from is exhausted: an ADD found it full and
// nothing has been released there since. The rule needs no scan: the
// exhaustion marks live beside the index and are trusted only while the
// index is (another writer's release invalidates them).
func cmdStatus(req *plugin.Request) error {
	c, targets, err := load(req)
	if err != nil {
		return err
	}
	for _, t := range c.WithDefinedPools(targets) {
		full, err := alloc.ChainFull(t, func(p alloc.Target) (bool, error) {
			full, err := hostlocal.Exhausted(c.dir(p.Scope))
			return slices.Contains(full, p.RangeID), err
		})
		if err != nil {
			return err
		}
		if full {
			return cnierr.New(cnierr.CodeNotAvailable, "address pool exhausted", "%s in %s", t.Label, filepath.Base(c.dir(t.Scope)))
		}
	}
	return nil
}
