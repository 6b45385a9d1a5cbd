package alloctest_test

import (
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

func TestStoreContract(t *testing.T) {
	alloctest.RunStoreContract(t, alloctest.Caps{Cursor: true, Migration: true}, func(*testing.T) alloctest.Subject { return alloctest.Mem() })
}
