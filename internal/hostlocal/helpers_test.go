package hostlocal

import (
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
)

// Attachment is short for the tests, which name many.
type Attachment = alloc.Attachment

// diskHarness opens and closes a state directory around every call, so
// that every step also goes through commit and reload.
type diskHarness struct{ dir string }

func (h diskHarness) with(t *testing.T, f func(al *alloc.Allocator, d *Disk)) {
	t.Helper()
	d, err := Open(h.dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f(alloc.New(d), d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func allocate(t *testing.T, h diskHarness, a Attachment, rangeID int, rs addrspace.RangeSet) (netip.Prefix, error) {
	t.Helper()
	var (
		p   netip.Prefix
		err error
	)
	h.with(t, func(al *alloc.Allocator, _ *Disk) { p, _, err = al.Allocate(a, rangeID, rs, netip.Addr{}, "ranges[0]") })
	return p, err
}

func mustAlloc(t *testing.T, h diskHarness, a Attachment, rs addrspace.RangeSet) netip.Addr {
	t.Helper()
	p, err := allocate(t, h, a, 0, rs)
	if err != nil {
		t.Fatal(err)
	}
	return p.Addr()
}

// stampNanos is the nanoseconds the stamp in idx records (its first
// line), 0 when it records none: missing, garbled or untrusted.
func stampNanos(t *testing.T, idx string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(idx, stampName))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	n, _ := strconv.ParseInt(first, 10, 64)
	return n
}
