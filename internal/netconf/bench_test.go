package netconf

import "testing"

// BenchmarkParse is the envelope parse every personality pays once per call.
func BenchmarkParse(b *testing.B) {
	conf := []byte(`{"cniVersion":"1.0.0","name":"blue-net","type":"bridge","bridge":"cni0","isGateway":true,
		"ipam":{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],
		"pools":[{"name":"blue","subnet":"10.10.0.0/16"}],"dataDir":"/var/lib/cni/networks"},
		"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"blue","subnet":"10.10.0.0/16"}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(conf); err != nil {
			b.Fatal(err)
		}
	}
}
