package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/version"
)

// The test binary stands for a lean build, with no flavour binaries
// beside it; other is a binary named by --binary, whose names are what
// its `list` prints.
func TestToInstall(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "cniplugins-full")
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho ipam-x; echo ipam-y\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lean := Lean(version.FlavourLean)
	cases := []struct {
		binary, flavour, want string
		names                 []string
		err                   string
	}{
		{"", "", self, lean.Registry.Names(), ""},
		{"", "lean", self, lean.Registry.Names(), ""},
		{self, "", self, lean.Registry.Names(), ""},
		{other, "", other, []string{"ipam-x", "ipam-y"}, ""},
		{"/x/cniplugins-full", "full", "", nil, "exclusive"},
		{"", "fat", "", nil, "unknown flavour"},
		{"", "full", "", nil, "no cniplugins-full beside"},
		{"", "verbose", "", nil, "no cniplugins-verbose beside"},
	}
	for _, c := range cases {
		got, names, err := lean.toInstall(c.binary, c.flavour)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) || got != c.want || !slices.Equal(names, c.names) {
			t.Errorf("toInstall(%q, %q) = %q, %q, %v; want %q, %q, %q", c.binary, c.flavour, got, names, err, c.want, c.names, c.err)
		}
	}
}
