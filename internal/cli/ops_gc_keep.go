package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// parseKeep reads "CONTAINERID" (every reservation of that container) or
// "CONTAINERID@IFNAME" (that attachment, plus the container's legacy
// id-only reservations).
func parseKeep(s string) (alloc.Attachment, error) {
	id, ifname, _ := strings.Cut(strings.TrimSpace(s), "@")
	if id == "" {
		return alloc.Attachment{}, fmt.Errorf("invalid --keep %q: want CONTAINERID[@IFNAME]", s)
	}
	return alloc.Attachment{ContainerID: id, IfName: ifname}, nil
}

// readKeeps reads one CONTAINERID[@IFNAME] per line; blank lines and
// lines starting with '#' are skipped.
func readKeeps(r io.Reader) ([]alloc.Attachment, error) {
	var out []alloc.Attachment
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, err := parseKeep(line)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// readKeepFile is --keep-file's attachments.
func readKeepFile(path string) ([]alloc.Attachment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readKeeps(f)
}
