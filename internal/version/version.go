// Package version holds the build's identity and the CNI spec versions every
// personality speaks.
//
// Version, Commit and Flavour are set at link time with -ldflags -X (see the
// Makefile); they are never written at run time.
package version

import (
	"fmt"
	"runtime"
	"strings"

	cniversion "github.com/containernetworking/cni/pkg/version"
)

var (
	// Version is `git describe --tags --always --dirty` at build time.
	Version = "dev"
	// Commit is the full commit hash at build time.
	Commit = "unknown"
	// Flavour is "verbose" for the debug-logging build (cniplugins-verbose).
	Flavour = ""
)

// SpecVersions lists the CNI spec versions every personality answers VERSION
// with and accepts in its config.
func SpecVersions() []string {
	return []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}
}

// PluginInfo is what VERSION prints.
func PluginInfo() cniversion.PluginInfo {
	return cniversion.PluginSupports(SpecVersions()...)
}

// Verbose reports whether this is the verbose flavour.
func Verbose() bool { return Flavour == "verbose" }

// About is the one-line identity used in VERSION's about string and logs.
func About(personality string) string {
	return fmt.Sprintf("cniplugins %s %s", personality, Version)
}

// Long is what `cniplugins version` prints.
func Long() string {
	flavour := Flavour
	if flavour == "" {
		flavour = "standard"
	}
	return fmt.Sprintf("cniplugins %s\ncommit: %s\nflavour: %s\ngo: %s %s/%s\ncni spec versions: %s\n",
		Version, Commit, flavour, runtime.Version(), runtime.GOOS, runtime.GOARCH, strings.Join(SpecVersions(), ", "))
}
