package hostlocal

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// The disk store, opened and closed around every command as a plugin
// run does, so that every step also goes through commit and reload.
func TestStoreContract(t *testing.T) {
	alloctest.RunStoreContract(t, alloctest.Caps{Cursor: true, Migration: true}, func(t *testing.T) alloctest.Subject {
		dir := filepath.Join(t.TempDir(), "p")
		return alloctest.NewEngine(func() (alloctest.Store, func() error, error) {
			d, err := Open(dir, time.Second)
			if err != nil {
				return nil, nil, err
			}
			return d, d.Close, nil
		})
	})
}
