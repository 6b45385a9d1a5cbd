package k8sinstall

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cniplugins/cniplugins/internal/install"
)

// dataLink is the kubelet's link, in a ConfigMap volume, to the current
// generation of its content: <dir>/<key> -> ..data/<key>, and ..data ->
// ..<timestamp>, a directory beside it. An update writes a new generation
// and swaps ..data in one rename.
const dataLink = "..data"

// sourceFile is one configuration file of the ConfigMap, read.
type sourceFile struct {
	name string
	data []byte
}

// confName reports whether libcni would load a file of that name from
// net.d (containerd and CRI-O read .conflist, .conf and .json).
func confName(name string) bool {
	switch filepath.Ext(name) {
	case ".conflist", ".conf", ".json":
		return true
	}
	return false
}

// readSource reads every configuration file of the ConfigMap volume dir,
// by these rules, since whoever may edit the ConfigMap (a namespace admin,
// say) is not whoever may write the node's net.d:
//   - a hidden key (a leading '.') is skipped and named in skipped: it
//     would sort before every other file of net.d, and containerd loads
//     the first;
//   - a key is read only as a regular file in dir, or through the
//     kubelet's own links (<key> -> ..data/<key>, ..data -> a directory
//     ..<timestamp> of dir), never through any other link;
//   - each file is opened O_NOFOLLOW|O_NONBLOCK and fstat'ed as a regular
//     file of at most maxConfSize bytes before it is read, so a FIFO, a
//     device or a huge file never stalls or exhausts the installer.
//
// Any key that breaks a rule is an error naming it and why; the files are
// read all from one generation of ..data.
func readSource(dir string) (files []sourceFile, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read the ConfigMap %s: %w", dir, err)
	}
	var (
		data    *os.File // the generation ..data points at, opened once
		dataErr error
		failed  []error
	)
	defer func() {
		if data != nil {
			data.Close()
		}
	}()
	read := func(e os.DirEntry) ([]byte, error) {
		path := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSymlink == 0 {
			return install.ReadRegular(path, maxConfSize)
		}
		target, err := os.Readlink(path)
		if err != nil {
			return nil, err
		}
		if target != dataLink+"/"+e.Name() {
			return nil, fmt.Errorf("a symbolic link to %q: only the kubelet's link to %s/%s is followed", target, dataLink, e.Name())
		}
		if data == nil {
			if data, dataErr = openGeneration(dir); dataErr != nil {
				return nil, dataErr
			}
		}
		return install.ReadRegularAt(data, e.Name(), maxConfSize)
	}
	for _, e := range entries {
		name := e.Name()
		if !confName(name) {
			continue // ..data, the generations, a README
		}
		if strings.HasPrefix(name, ".") {
			skipped = append(skipped, name)
			continue
		}
		b, err := read(e)
		if dataErr != nil {
			return nil, skipped, dataErr
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", name, err))
			continue
		}
		files = append(files, sourceFile{name: name, data: b})
	}
	slices.SortFunc(files, func(a, b sourceFile) int { return strings.Compare(a.name, b.name) })
	return files, skipped, errors.Join(failed...)
}

// openGeneration opens the directory ..data points at, which must be a
// directory of dir itself (..<timestamp>), not a link and not anywhere
// else.
func openGeneration(dir string) (*os.File, error) {
	link := filepath.Join(dir, dataLink)
	gen, err := os.Readlink(link)
	if err != nil {
		return nil, fmt.Errorf("the ConfigMap %s: %s: %w", dir, dataLink, err)
	}
	if !strings.HasPrefix(gen, "..") || strings.ContainsRune(gen, '/') || gen == ".." {
		return nil, fmt.Errorf("the ConfigMap %s: %s points at %q, not a generation directory (..<timestamp>) beside it", dir, dataLink, gen)
	}
	path := filepath.Join(dir, gen)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the ConfigMap %s: %s -> %s: not a directory: %w", dir, dataLink, gen, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}
