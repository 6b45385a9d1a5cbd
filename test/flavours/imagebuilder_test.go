package flavours

import (
	"strings"
	"testing"
)

// The image builder of `make image` (internal/tools/ociimage, internal/ociimage and
// go-containerregistry, which brings net/http and crypto) is a build
// tool: neither binary may link it.
func TestNoBinaryLinksTheImageBuilder(t *testing.T) {
	for _, main := range []string{"./cmd/cniplugins", "./cmd/cniplugins-full"} {
		for _, dep := range strings.Fields(goCmd(t, "list", "-deps", main)) {
			if strings.HasPrefix(dep, "github.com/google/go-containerregistry") || dep == "github.com/cniplugins/cniplugins/internal/ociimage" {
				t.Errorf("%s depends on %s", main, dep)
			}
		}
	}
}
