package ipamconf_test

import (
	"slices"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
)

// One rule for both allocators: the sticky CNI_ARGS keys are accepted
// with ipam.sticky or in a chain, and standalone without it CNI_ARGS are
// host-local's.
func TestArgKeys(t *testing.T) {
	sticky := append([]string{"IP"}, ipamconf.StickyArgKeys()...)
	for _, tc := range []struct {
		ipam string
		want []string
	}{
		{`{"type":"ipam-da-pools"}`, []string{"IP"}},
		{`{"type":"ipam-da-etcd"}`, []string{"IP"}},
		{`{"type":"host-local"}`, []string{"IP"}},
		{`{"type":"ipam-da-pools","sticky":{}}`, sticky},
		{`{"type":"ipam-da-etcd","sticky":{"by":["pod"]}}`, sticky},
		{`{"type":"ipam-delegated"}`, sticky},
	} {
		got, err := ipamconf.ArgKeys(alloctest.Envelope(t, `{"cniVersion":"1.0.0","name":"n","ipam":`+tc.ipam+`}`))
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.ipam, got, err, tc.want)
		}
	}
}
