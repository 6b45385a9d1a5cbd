package ops

import "fmt"

// definition is one configuration's ranges for a shared state (a state
// directory's range set or pool), where it first gives them.
type definition struct {
	ranges, file, path string
	row                int // the pools row counting its addresses
}

func (d definition) String() string { return fmt.Sprintf("%s (%s: %s)", d.file, d.path, d.ranges) }

// definitions are the distinct definitions configurations give each
// shared state, by key, in the order first given. More than one is a
// conflict: the networks sharing the state would disagree on its ranges,
// which validate reports and pools shows.
type definitions map[string][]definition

// add records d for key unless a definition of the same ranges is
// recorded already; it returns that one (added false), else d.
func (ds definitions) add(key string, d definition) (_ definition, added bool) {
	for _, e := range ds[key] {
		if e.ranges == d.ranges {
			return e, false
		}
	}
	ds[key] = append(ds[key], d)
	return d, true
}
