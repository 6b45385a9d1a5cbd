package alloctest

import (
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// Fixtures shared by the engine's tests and its stores' tests.
var (
	CidA = alloc.Attachment{ContainerID: "cid-a", IfName: "eth0"}
	CidB = alloc.Attachment{ContainerID: "cid-b", IfName: "eth0"}
)

// Small is 10.0.0.0/29 with gateway .1: allocatable .2-.6.
func Small(t testing.TB) addrspace.RangeSet {
	return MustSet(t, addrspace.RangeConfig{Subnet: "10.0.0.0/29"})
}

// Envelope parses a network configuration or fails the test.
func Envelope(t testing.TB, conf string) *netconf.Envelope {
	t.Helper()
	env, err := netconf.Parse([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// MustSet parses a range set or fails the test.
func MustSet(t testing.TB, cfgs ...addrspace.RangeConfig) addrspace.RangeSet {
	t.Helper()
	rs, err := addrspace.ParseRangeSet("test", cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// AssertCode fails the test unless err carries CNI error code code.
func AssertCode(t testing.TB, err error, code uint) {
	t.Helper()
	if got := cnierr.Code(err); got != code {
		t.Fatalf("error %v: code %d, want %d", err, got, code)
	}
}
