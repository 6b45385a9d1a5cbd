package clusteraccess

import "testing"

// Prefix is the one reading of ipam.etcd.prefix, the lean binary's and
// the store's: the default when empty, and a final '/', or pools --etcd
// would skip every network.
func TestPrefix(t *testing.T) {
	for in, want := range map[string]string{"": DefaultPrefix, "/x": "/x/", "/x/": "/x/"} {
		if got := Prefix(in); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", in, got, want)
		}
	}
}
