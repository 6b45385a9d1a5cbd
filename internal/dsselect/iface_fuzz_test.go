package dsselect

import "testing"

// FuzzIface runs ipam-ds-iface, over the fake host of iface_test.go, on
// a fuzzed config: typed errors only, and pools that validate again (the
// exclude, familyRanges and pool names it builds included).
func FuzzIface(f *testing.F) {
	f.Fuzz(func(t *testing.T, cmd uint8, stdin []byte) { fuzzSelector(t, ifaceWith(lan()), cmd, stdin) })
}
