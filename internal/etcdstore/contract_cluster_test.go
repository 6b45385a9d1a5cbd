//go:build etcdcluster

package etcdstore_test

import (
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

// The store contract once more, over a real 3-member cluster: what the
// in-memory etcd stands for in the unit tests is held to etcd itself.
// Behind the etcdcluster build tag, so that `make unit` (./internal/...)
// starts no daemon; scripts/gotest.sh, and so `make test`, runs it.
func TestStoreContractOnACluster(t *testing.T) {
	endpoints := startCluster(t)
	alloctest.RunStoreContract(t, alloctest.Caps{Migration: true}, func(t *testing.T) alloctest.Subject {
		return newEtcdSubject(t, endpoints, "/contract-test/"+t.Name()+"/")
	})
}

// startCluster starts a 3-member cluster for t, stopped when t ends, and
// returns its endpoints.
func startCluster(t *testing.T) []string {
	t.Helper()
	testkit.NeedComponent(t, etcdtest.Available())
	c, err := etcdtest.Start(etcdtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c.Endpoints()
}
