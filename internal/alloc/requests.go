package alloc

import (
	"net/netip"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// assignRequests gives each target without its own request the first
// unused requested address inside its range set, in target order. An
// address that fits no target is code 101: it cannot be honoured.
func assignRequests(targets []Target, requested []netip.Addr) error {
	used := make([]bool, len(requested))
	for i := range targets {
		if targets[i].Requested.IsValid() {
			continue
		}
		for j, a := range requested {
			if !used[j] && targets[i].Set.Contains(a) {
				targets[i].Requested, used[j] = a, true
				break
			}
		}
	}
	var left []string
	for j, a := range requested {
		if !used[j] && !isPoolRequest(targets, a) {
			left = append(left, a.String())
		}
	}
	if len(left) > 0 {
		return cnierr.New(cnierr.CodeAddrUnavailable, "requested address is in no selected range set", "%s", strings.Join(left, ","))
	}
	return nil
}

// isPoolRequest: a global request equal to a Pool object's own request is
// the same wish said twice, not an unserved one.
func isPoolRequest(targets []Target, a netip.Addr) bool {
	for _, t := range targets {
		if t.Requested == a {
			return true
		}
	}
	return false
}
