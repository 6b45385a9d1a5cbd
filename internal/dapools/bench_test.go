package dapools

import (
	"testing"

	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// BenchmarkParseConfig is ipam-da-pools' config work before any disk
// access: envelope, ipam section, requests, pools and range sets.
func BenchmarkParseConfig(b *testing.B) {
	for _, tt := range []struct{ name, conf string }{
		{"standalone", `{"cniVersion":"1.0.0","name":"n","ipam":{"type":"ipam-da-pools","dataDir":"/nonexistent/d",
			"ranges":[[{"subnet":"203.0.113.0/24"}],[{"subnet":"2001:db8:1::/64"}]],"routes":[{"dst":"0.0.0.0/0"}]}}`},
		{"pool mode", `{"cniVersion":"1.0.0","name":"n","ipam":{"type":"ipam-delegated","dataDir":"/nonexistent/d",
			"poolDefinitions":{"def":[{"subnet":"10.5.0.0/16"}]}},
			"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"in","subnet":"10.4.0.0/16"},{"name":"def"}]}}`},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				env, err := netconf.Parse([]byte(tt.conf))
				if err != nil {
					b.Fatal(err)
				}
				c, err := ipamconf.Parse(env, nil, true)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := OwnKeys(env); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Targets(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
