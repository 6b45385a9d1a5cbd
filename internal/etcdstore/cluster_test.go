package etcdstore_test

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
	. "github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// cluster is the in-memory etcd (etcdkvfake) every test of the package
// runs against, each under its own prefix: the unit tests need no etcd
// binary. The plugin runs against real clusters in test/etcd, and the
// store contract once more in contract_cluster_test.go.
var cluster memCluster

// memCluster gives the fake the two methods the tests use of a cluster.
type memCluster struct{ *etcdkvfake.Fake }

func (c memCluster) Endpoints() []string { return []string{c.URL()} }

func (c memCluster) Keys(prefix string) ([]string, error) {
	return slices.Sorted(maps.Keys(c.Values(prefix))), nil
}

// cleanups is a TestMain's testing.TB Cleanup: the fake's server stops
// after every test has run.
type cleanups []func()

func (c *cleanups) Cleanup(f func()) { *c = append(*c, f) }

func TestMain(m *testing.M) {
	var done cleanups
	cluster = memCluster{etcdkvfake.New(&done)}
	code := m.Run()
	for _, f := range done {
		f()
	}
	os.Exit(code)
}

// operatorAt is the store's operator side for the test's keys under
// base.
func operatorAt(t *testing.T, base string) *Operator {
	o, err := OpenOperator(clusteraccess.Access{Endpoints: cluster.Endpoints(), Prefix: base + t.Name() + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// leasesAt is every lease of the test's keys under base, as `leases`
// lists them.
func leasesAt(t *testing.T, base string) ([]ops.Lease, error) {
	a, err := OpenOperator(clusteraccess.Access{Endpoints: cluster.Endpoints(), Prefix: base + t.Name() + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return a.Leases("", "")
}
