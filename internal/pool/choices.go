package pool

import (
	"fmt"
	"slices"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// MaxChoices bounds prevResult.choices: a selector names at most one set
// per rule (ipam-ds-args allows 1024), one per pod-choosable pool and
// its defaults; more is hostile input.
const MaxChoices = 2048

// ChoicesFromPrevResult returns prevResult.choices, each set checked
// against pools (the selection's pools): nil when absent, meaning the one
// set of all the pools.
func ChoicesFromPrevResult(conf *netconf.Envelope, pools []Pool) ([][]string, error) {
	prev, err := prevSelection(conf)
	if err != nil || absent(prev.Choices) {
		return nil, err
	}
	var choices [][]string
	if err := netconf.Decode(prev.Choices, "prevResult.choices", &choices); err != nil {
		return nil, err
	}
	if len(choices) == 0 {
		return nil, cnierr.InvalidConfig("prevResult.choices", "[]", "must list at least one set of pools")
	}
	if len(choices) > MaxChoices {
		return nil, cnierr.InvalidConfig("prevResult.choices", fmt.Sprintf("%d sets", len(choices)), fmt.Sprintf("at most %d sets", MaxChoices))
	}
	names := Names(pools)
	for i, set := range choices {
		if len(set) == 0 {
			return nil, cnierr.InvalidConfig(fmt.Sprintf("prevResult.choices[%d]", i), "[]", "must name at least one pool")
		}
		for j, name := range set {
			if !slices.Contains(names, name) {
				return nil, cnierr.InvalidConfig(fmt.Sprintf("prevResult.choices[%d][%d]", i, j), name, "names no pool of prevResult.pools")
			}
		}
	}
	return choices, nil
}
