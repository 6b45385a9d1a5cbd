package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/version"
)

// The test binary stands for a lean build, with no flavour binaries
// beside it.
func TestFlavourBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ binary, flavour, want, err string }{
		{"", "", self, ""},
		{"", "lean", self, ""},
		{"/x/cniplugins-full", "", "/x/cniplugins-full", ""},
		{"/x/cniplugins-full", "full", "", "exclusive"},
		{"", "fat", "", "unknown flavour"},
		{"", "full", "", "no cniplugins-full beside"},
		{"", "verbose", "", "no cniplugins-verbose beside"},
	}
	for _, c := range cases {
		got, err := Lean(version.FlavourLean).flavourBinary(c.binary, c.flavour)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) || got != c.want {
			t.Errorf("flavourBinary(%q, %q) = %q, %v; want %q, %q", c.binary, c.flavour, got, err, c.want, c.err)
		}
	}
}
