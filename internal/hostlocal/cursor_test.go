package hostlocal

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// A failed ADD puts back the cursors it moved, byte for byte, and removes
// the ones it created: KeepCursor then its restore is invisible.
func TestCursorSaveRestore(t *testing.T) {
	for _, tt := range []struct {
		name    string
		initial *string // cursor file content before; nil: none
	}{
		{"no cursor", nil},
		{"a cursor", ptr("10.0.0.3")},
		{"garbage host-local ignores", ptr("not an address\n")},
		{"empty file", ptr("")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "net")
			cursor := filepath.Join(dir, "last_reserved_ip.0")
			if tt.initial != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(cursor, []byte(*tt.initial), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			h := diskHarness{dir}
			h.with(t, func(al *alloc.Allocator, s *Disk) {
				restore, err := s.KeepCursor(0)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := al.Allocate(alloctest.CidA, 0, alloctest.Small(t), netip.Addr{}, "r"); err != nil {
					t.Fatal(err)
				}
				if err := restore(); err != nil {
					t.Fatal(err)
				}
			})
			b, err := os.ReadFile(cursor)
			switch {
			case tt.initial == nil && !os.IsNotExist(err):
				t.Errorf("cursor created by the undone ADD still there: %q, %v", b, err)
			case tt.initial != nil && (err != nil || string(b) != *tt.initial):
				t.Errorf("cursor = %q, %v; want %q", b, err, *tt.initial)
			}
		})
	}
}

func ptr(s string) *string { return &s }
