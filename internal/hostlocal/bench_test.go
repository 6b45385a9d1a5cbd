package hostlocal

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// prefill writes n reservations into a /16 exactly as host-local would
// (10.0.0.2 upwards, cursor on the last one) and opens the directory once
// so that the index is rebuilt before any timer starts.
func prefill(b *testing.B, n int) (string, netip.Addr) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "net")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ip := netip.MustParseAddr("10.0.0.1")
	for i := range n {
		ip = ip.Next()
		writeForeign(b, dir, ip.String(), fmt.Sprintf("prefill-%d\r\neth0", i))
	}
	writeForeign(b, dir, "last_reserved_ip.0", ip.String())
	start := time.Now()
	closeT(b, openT(b, dir))
	b.Logf("n=%d: index rebuild took %v", n, time.Since(start))
	return dir, ip
}

// BenchmarkAllocateRelease measures one ADD (Open, Allocate, Close) plus
// one DEL (Open, Release, Close) against a directory already holding n
// reservations. The cost must not depend on n.
func BenchmarkAllocateRelease(b *testing.B) {
	rs := alloctest.MustSet(b, addrspace.RangeConfig{Subnet: "10.0.0.0/16"})
	for _, n := range []int{0, 10_000, 60_000} {
		dir, cursor := prefill(b, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			a := Attachment{ContainerID: "bench", IfName: "eth0"}
			for b.Loop() {
				d, err := Open(dir, time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := alloc.New(d).Allocate(a, 0, rs, netip.Addr{}, "r"); err != nil {
					b.Fatal(err)
				}
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
				if d, err = Open(dir, time.Second); err != nil {
					b.Fatal(err)
				}
				if rel, err := alloc.Release(d, a, nil); err != nil || len(rel) != 1 {
					b.Fatal(rel, err)
				}
				// Keep the cursor where prefill left it so that every
				// iteration takes the first free address instead of the
				// round robin eventually wrapping into the prefilled block.
				if err := d.SetLastReserved(0, cursor); err != nil {
					b.Fatal(err)
				}
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScan is what host-local pays on every ADD and DEL: reading
// every reservation file. It is here for comparison only.
func BenchmarkScan(b *testing.B) {
	dir, _ := prefill(b, 10_000)
	d := openT(b, dir)
	defer closeT(b, d)
	for b.Loop() {
		if _, err := d.scan(); err != nil {
			b.Fatal(err)
		}
	}
}
