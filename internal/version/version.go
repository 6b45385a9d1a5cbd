// Package version holds the build's identity and the CNI spec versions every
// personality speaks.
//
// Version, Commit and Flavour are set at link time with -ldflags -X (see the
// Makefile); they are never written at run time. The flavours' names are
// defined here once, since `version`, `install --flavour` and the binaries'
// file names all spell them.
package version

import (
	"fmt"
	"runtime"
	"strings"
)

var (
	// Version is `git describe --tags --always --dirty` at build time.
	Version = "dev"
	// Commit is the full commit hash at build time.
	Commit = "unknown"
	// Flavour is FlavourVerbose in cniplugins-verbose and empty otherwise:
	// that flavour is cmd/cniplugins linked with this flag rather than a
	// main of its own, so the flag is the only way it differs. Read it
	// through LeanOrVerbose and Verbose.
	Flavour = ""
)

// The flavours' names: what `version` prints, what --flavour takes, and
// the suffix of each binary's file name (cniplugins-NAME; the lean one is
// plain cniplugins).
const (
	FlavourLean    = "lean"
	FlavourVerbose = "verbose"
	FlavourFull    = "full"
)

// Flavours lists every flavour's name, lean first.
func Flavours() []string { return []string{FlavourLean, FlavourVerbose, FlavourFull} }

// LeanOrVerbose is the flavour cmd/cniplugins was linked as.
func LeanOrVerbose() string {
	if Verbose() {
		return FlavourVerbose
	}
	return FlavourLean
}

// SpecVersions lists the CNI spec versions every personality answers VERSION
// with and accepts in its config.
func SpecVersions() []string {
	return []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}
}

// Verbose reports whether this is the verbose flavour.
func Verbose() bool { return Flavour == FlavourVerbose }

// Long is what `cniplugins version` prints, for the named flavour (the
// one its main built, so that it is the name the CLI uses too).
func Long(flavour string) string {
	return fmt.Sprintf("cniplugins %s\ncommit: %s\nflavour: %s\ngo: %s %s/%s\ncni spec versions: %s\n",
		Version, Commit, flavour, runtime.Version(), runtime.GOOS, runtime.GOARCH, strings.Join(SpecVersions(), ", "))
}
