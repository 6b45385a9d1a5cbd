package ipamconf_test

import (
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// Validate checks a file as ADD would read it, for every allocator alike:
// the addresses the file requests must fit its ranges (101, ADD's code).
func TestValidateRequestedAgainstRanges(t *testing.T) {
	p := ipamconf.Personality("ipam-da-test", "", nil, func(*netconf.Envelope) error { return nil })
	for _, tt := range []struct {
		name, args string
		code       uint
	}{
		{"no request", `{}`, 0},
		{"in range", `{"cni":{"ips":["10.214.0.9"]}}`, 0},
		{"outside every range", `{"cni":{"ips":["10.9.9.9"]}}`, cnierr.CodeAddrUnavailable},
		{"not an address", `{"cni":{"ips":["10.214.0"]}}`, cnierr.CodeInvalidConfig},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n","args":`+tt.args+`,"ipam":{"type":"ipam-da-test","ranges":[[{"subnet":"10.214.0.0/24"}]]}}`)
			err := p.Validate(env)
			if got := cnierr.Code(err); got != tt.code {
				t.Fatalf("Validate: code %d (%v), want %d", got, err, tt.code)
			}
		})
	}
}
