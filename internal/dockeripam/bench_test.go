package dockeripam

import (
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/logging"
)

// BenchmarkRequestReleaseAddress is one RequestAddress+ReleaseAddress
// pair in-process: the engine's share of what bench/fullflavour measures
// over the socket.
func BenchmarkRequestReleaseAddress(b *testing.B) {
	d := benchDriver(b)
	p, err := d.RequestPool(RequestPoolRequest{Pool: "10.213.1.0/24"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		a, err := d.RequestAddress(RequestAddressRequest{PoolID: p.PoolID})
		if err != nil {
			b.Fatal(err)
		}
		ip, _, _ := strings.Cut(a.Address, "/")
		if err := d.ReleaseAddress(ReleaseAddressRequest{PoolID: p.PoolID, Address: ip}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandlerPair is the same pair through the HTTP handlers over
// an in-memory connection: the server's share.
func BenchmarkHandlerPair(b *testing.B) {
	d := benchDriver(b)
	api := served(b, d)
	_, got := api.post(b, "POST", "/IpamDriver.RequestPool", `{"Pool":"10.213.1.0/24"}`)
	id, _ := got["PoolID"].(string)
	b.ResetTimer()
	for b.Loop() {
		_, got := api.post(b, "POST", "/IpamDriver.RequestAddress", `{"PoolID":"`+id+`"}`)
		addr, _ := got["Address"].(string)
		ip, _, _ := strings.Cut(addr, "/")
		api.post(b, "POST", "/IpamDriver.ReleaseAddress", `{"PoolID":"`+id+`","Address":"`+ip+`"}`)
	}
}

// benchDriver is a driver with every default on a fresh data directory.
func benchDriver(b *testing.B) *Driver {
	cfg, err := LoadConfig("", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	d, err := Open(cfg, logging.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}
