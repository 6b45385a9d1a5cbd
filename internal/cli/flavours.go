package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cniplugins/cniplugins/internal/version"
)

// flavourFile is the file name `make build` and the release tarball
// give a flavour's binary.
func flavourFile(flavour string) (string, bool) {
	switch flavour {
	case version.FlavourLean:
		return "cniplugins", true
	case version.FlavourVerbose, version.FlavourFull:
		return "cniplugins-" + flavour, true
	}
	return "", false
}

// isBinaryName reports the names the binary itself is installed under:
// every flavour's file name.
func isBinaryName(name string) bool {
	for _, f := range version.Flavours() {
		if file, _ := flavourFile(f); file == name {
			return true
		}
	}
	return false
}

// flavourChoices is --flavour's help: each flavour with its file name.
func flavourChoices() string {
	var s []string
	for _, f := range version.Flavours() {
		file, _ := flavourFile(f)
		s = append(s, f+" ("+file+")")
	}
	return joinOr(s)
}

// toInstall is the executable `install` installs and its personalities:
// --binary, else this executable when --flavour is none or its own, else
// the --flavour's binary beside this executable. This executable's names
// are this flavour's; another binary's are what its `list` prints, so
// that installing another flavour links exactly its names (and the
// installer can drop the ones it lacks).
func (f Flavour) toInstall(binary, flavour string) (string, []string, error) {
	if binary != "" && flavour != "" {
		return "", nil, fmt.Errorf("--binary and --flavour are exclusive")
	}
	self, err := os.Executable()
	if binary == "" && err != nil {
		return "", nil, err
	}
	if binary == "" && flavour != "" && flavour != f.Name {
		if binary, err = f.beside(self, flavour); err != nil {
			return "", nil, err
		}
	}
	if binary == "" {
		return self, f.Registry.Names(), nil
	}
	if sameFile(binary, self) {
		return binary, f.Registry.Names(), nil
	}
	// Called by its own file name, whatever that is, the binary would
	// take it as an unknown personality; `cniplugins list` is the
	// busybox form every flavour understands.
	cmd := exec.Command(binary, "list")
	cmd.Args[0] = "cniplugins"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s list: %v: %s", binary, err, strings.TrimSpace(stderr.String()))
	}
	names := strings.Fields(string(out))
	if len(names) == 0 {
		return "", nil, fmt.Errorf("%s list printed no personality", binary)
	}
	return binary, names, nil
}

// beside is flavour's binary beside self, another flavour's.
func (f Flavour) beside(self, flavour string) (string, error) {
	file, ok := flavourFile(flavour)
	if !ok {
		return "", fmt.Errorf("unknown flavour %q (%s)", flavour, joinOr(version.Flavours()))
	}
	path := filepath.Join(filepath.Dir(self), file)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("flavour %s: no %s beside %s (run it from the source tree's bin/ or the release directory, or pass --binary)", flavour, file, self)
	}
	// An installed binary is named cniplugins whatever its flavour: the
	// lean flavour's file name beside it is itself.
	if sameFile(path, self) {
		return "", fmt.Errorf("flavour %s: %s is this binary, of flavour %s (run install from the source tree's bin/ or the release directory, or pass --binary)", flavour, path, f.Name)
	}
	return path, nil
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// fullOnlyUsage is a flag's usage, marked when this flavour lacks what
// the flag needs (linked false).
func fullOnlyUsage(usage string, linked bool) string {
	if !linked {
		usage += " (full flavour only: cniplugins-full)"
	}
	return usage
}

// fullOnly reports the personalities and commands that only the full
// flavour has. They are plain words here, so that a leaner flavour can
// say where they live without linking any of them; test/flavours checks
// the list against what the full binary answers to.
func fullOnly(name string) bool {
	switch name {
	case "ipam-da-etcd", "docker-ipam":
		return true
	}
	return false
}
