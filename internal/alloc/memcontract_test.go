package alloc_test

import (
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// The in-memory store under the engine's contract, as ipam-da-pools and
// ipam-da-etcd run it: every row through the allocator's own CNI
// commands (ipamconf.Personality over MemStores, the engine's drivers
// doing the work), the operators' releases through
// alloc.OperatorRelease, crashes through Faults.
func TestStoreContractInMemory(t *testing.T) {
	alloctest.RunStoreContract(t, alloctest.Caps{Cursor: true, Migration: true}, func(*testing.T) alloctest.Subject {
		return alloctest.NewMemSubject()
	})
}
