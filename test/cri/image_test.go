package cri

import (
	"fmt"
	"os/exec"

	"github.com/cniplugins/cniplugins/internal/testkit/ctrimage"
)

// buildPause builds the pause image at root/pause.tar.
func buildPause(root string) (string, error) { return ctrimage.Pause(root, pauseImage) }

// importImage loads the pause image into c's k8s.io namespace, where the
// CRI plugin finds its sandbox image.
func (c *containerd) importImage(tarPath string) error {
	imp := exec.Command(c.rel.bin("ctr"), "-a", c.sock, "-n", "k8s.io", "images", "import", "--snapshotter", "native", tarPath)
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import: %v\n%s", err, out)
	}
	return nil
}
