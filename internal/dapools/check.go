package dapools

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// Check verifies that every address in prevResult is reserved for this
// attachment in the range set or pool it belongs to; without addresses in
// prevResult, the engine's rule (alloc.CheckHeld) over what it holds.
func (c *config) Check(addrs []netip.Addr, targets []alloc.Target) error {
	return alloc.CheckScopes(addrs, targets, c.att, c.read)
}

// read runs fn on each of scopes' state directories in path order, all
// under their locks; CHECK only reads, so it creates no state directory
// (Open would), and fn gets nil for one that is not there.
func (c *config) read(scopes []alloc.Scope, fn func(alloc.Scope, alloc.Ledger) error) error {
	st, err := c.lock("", slices.DeleteFunc(slices.Clone(scopes), func(s alloc.Scope) bool {
		_, err := os.Lstat(c.dir(s))
		return errors.Is(err, fs.ErrNotExist)
	}))
	if err != nil {
		return err
	}
	defer st.close()
	for _, s := range inPathOrder(c.DataDir, scopes) {
		if err := fn(s, st.Pool(s)); err != nil {
			return err
		}
	}
	return nil
}
