package plugin

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/containernetworking/cni/pkg/types/create"

	"github.com/cniplugins/cniplugins/internal/version"
)

// FuzzRawResult: a delegate's output wrapped as a RawResult converts to
// every spec version without panicking; the same version is passed on
// byte for byte, and a converted result prints in the version asked for
// and decodes again.
func FuzzRawResult(f *testing.F) {
	f.Fuzz(func(t *testing.T, out []byte) {
		raw, err := NewRawResult(out)
		if err != nil {
			return
		}
		for _, v := range version.SpecVersions() {
			res, err := raw.GetAsVersion(v)
			if err != nil {
				continue
			}
			var buf bytes.Buffer
			if err := res.PrintTo(&buf); err != nil {
				t.Fatalf("%s: result does not print: %v", v, err)
			}
			if v == raw.CNIVersion {
				if !bytes.Equal(buf.Bytes(), out) {
					t.Fatalf("%s: same-version result not passed on verbatim", v)
				}
				continue
			}
			var got struct {
				CNIVersion string `json:"cniVersion"`
			}
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil || got.CNIVersion != v {
				t.Fatalf("converted to %s: printed %q (%v)", v, buf.Bytes(), err)
			}
			if _, err := create.Create(v, buf.Bytes()); err != nil {
				t.Fatalf("result converted to %s does not decode again: %v\n%s", v, err, buf.Bytes())
			}
		}
	})
}
