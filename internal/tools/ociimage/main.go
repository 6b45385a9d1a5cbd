// Command ociimage is `make image`'s builder (run by scripts/release.sh
// with go run; no binary of the project links it): from the static
// binaries of each architecture, it writes the lean and the full flavour's
// OCI image indexes as OCI layout archives,
//
//	OUT/cniplugins-<version>.oci.tar
//	OUT/cniplugins-full-<version>.oci.tar
//
// and prints each one's index digest. The personalities linked in the
// image are what the binary of this machine's architecture lists.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/ociimage"
)

// flavours: the image's name and the binary's file name in a build dir.
var flavours = []struct{ image, file string }{
	{"cniplugins", "cniplugins"},
	{"cniplugins-full", "cniplugins-full"},
}

type binDirs map[string]string

func (b binDirs) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binDirs) Set(v string) error {
	arch, dir, ok := strings.Cut(v, "=")
	if !ok || arch == "" || dir == "" {
		return fmt.Errorf("want GOARCH=DIR, got %q", v)
	}
	b[arch] = dir
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run() error {
	bins := binDirs{}
	out := flag.String("out", "dist", "directory to write the archives into")
	version := flag.String("version", "", "the version: the image tag and the archives' names")
	commit := flag.String("commit", "", "the commit (label org.opencontainers.image.revision)")
	epoch := flag.String("epoch", "0", "every timestamp in the images, in seconds since 1970 (the commit's time)")
	registry := flag.String("registry", "ghcr.io/cniplugins", "the images' names are REGISTRY/cniplugins and REGISTRY/cniplugins-full")
	examples := flag.String("examples", "examples", "directory copied to /examples in the images")
	flag.Var(bins, "bin", "GOARCH=DIR: the directory holding that architecture's cniplugins and cniplugins-full (repeatable)")
	flag.Parse()
	if *version == "" || len(bins) == 0 || flag.NArg() > 0 {
		return fmt.Errorf("usage: ociimage -version V -bin GOARCH=DIR... [-commit C] [-epoch SECONDS] [-out DIR]")
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("-epoch %q: %w", *epoch, err)
	}
	native, ok := bins[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no -bin for this machine's architecture %s: its binary lists the personalities to link", runtime.GOARCH)
	}
	for _, f := range flavours {
		names, err := personalities(filepath.Join(native, f.file))
		if err != nil {
			return err
		}
		s := ociimage.Spec{
			Repository: *registry + "/" + f.image, Version: *version, Commit: *commit,
			Epoch: time.Unix(secs, 0), Binaries: map[string]string{}, Names: names, Examples: *examples,
		}
		for arch, dir := range bins {
			s.Binaries[arch] = filepath.Join(dir, f.file)
		}
		idx, err := ociimage.Build(s)
		if err != nil {
			return err
		}
		dst := filepath.Join(*out, f.image+"-"+*version+".oci.tar")
		digest, err := ociimage.WriteArchive(idx, s, dst)
		if err != nil {
			return err
		}
		fmt.Printf("built %s: %s@%s\n", dst, s.Ref(), digest)
	}
	return nil
}

// personalities is what `cniplugins list` prints for binary.
func personalities(binary string) ([]string, error) {
	cmd := exec.Command(binary, "list")
	cmd.Args[0] = "cniplugins"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s list: %v: %s", binary, err, strings.TrimSpace(stderr.String()))
	}
	return strings.Fields(string(b)), nil
}
