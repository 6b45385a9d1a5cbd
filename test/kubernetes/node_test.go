package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/ctrimage"
	"github.com/cniplugins/cniplugins/internal/testkit/kubenode"
)

// The cluster is started by the first test that needs it (the manifests'
// tests need none) and stopped by TestMain, also when a test failed.
var (
	startOnce sync.Once
	theNode   *cluster
	startErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if theNode != nil {
		theNode.stop()
	}
	os.Exit(code)
}

// cluster is the node with what the tests installed on it.
type cluster struct {
	*kubenode.Node
	root    string // the tests' own files: images, the overlay, binaries
	dataDir string // ipam.dataDir of the installed conflist, on the host
	cli     string // a cniplugins binary of this tree, to read the state as an operator does
}

// Images the tests build and import; pods never pull.
const (
	imageRepo    = "cnpk8s.test/cniplugins-full"
	busyboxImage = "cnpk8s.test/busybox:1"
	// bridgeName is the conflist's bridge, on the host.
	bridgeName = "cnpk8s0"
)

// needNode returns the running node, starting it on first use. As root a
// node that cannot start fails the test (scripts/test-deps.sh, which make
// test runs first, builds everything it needs); without root it skips,
// saying why.
func needNode(t *testing.T) *cluster {
	t.Helper()
	startOnce.Do(func() { theNode, startErr = startCluster() })
	if startErr != nil {
		testkit.NeedComponent(t, startErr)
	}
	return theNode
}

func startCluster() (*cluster, error) {
	if err := kubenode.Available(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	n, err := kubenode.Start(ctx)
	if err != nil {
		return nil, err
	}
	n.Links = append(n.Links, bridgeName)
	c := &cluster{Node: n, root: filepath.Join(n.Root, "tests"), dataDir: filepath.Join(n.Root, "ipam")}
	fmt.Fprintf(os.Stderr, "test/kubernetes: Kubernetes %s node %s up in %s (%s)\n", kubenode.KubernetesVersion, n.Name, time.Since(start).Round(time.Second), n.Root)
	err = os.MkdirAll(c.root, 0o755)
	if err == nil {
		err = os.MkdirAll(c.dataDir, 0o755)
	}
	if err == nil {
		c.cli, err = testkit.Build(c.root, "full")
	}
	if err == nil {
		var bb string
		if bb, err = ctrimage.Busybox(c.root, busyboxImage); err == nil {
			err = n.Import(ctx, bb)
		}
	}
	if err != nil {
		n.Stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) stop() { c.Node.Stop() }

// kubectl runs kubectl and fails t on error.
func (c *cluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.Kubectl(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply applies manifest (YAML or JSON) with kubectl apply -f -.
func (c *cluster) apply(t *testing.T, manifest string) {
	t.Helper()
	if _, err := c.KubectlIn(t.Context(), []byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// wait polls f until it is nil, failing t with its last error after
// timeout.
func wait(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	if err := kubenode.Wait(t.Context(), timeout, what, f); err != nil {
		t.Fatal(err)
	}
}

// leases are the reservations of the installed network as `cniplugins
// leases` lists them.
type lease struct {
	Address     string `json:"address"`
	Pool        string `json:"pool"`
	ContainerID string `json:"containerID"`
	StickyKey   string `json:"stickyKey"`
	HoldExpires string `json:"holdExpires"`
}

func (c *cluster) leases(t *testing.T) []lease {
	t.Helper()
	out, err := runCLI(c.cli, "leases", "--data-dir", c.dataDir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ls []lease
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		t.Fatalf("leases -o json: %v: %s", err, out)
	}
	return ls
}

// addressesOf maps each address with a container to its lease.
func addressesOf(ls []lease) map[string]lease {
	m := map[string]lease{}
	for _, l := range ls {
		if l.ContainerID != "" {
			m[strings.Split(l.Address, "/")[0]] = l
		}
	}
	return m
}

// metricsPort is the metrics component's --metrics-address port; the
// DaemonSet's pod uses the host's network.
const metricsPort = 9745

// scrape GETs the installer's /metrics as Prometheus would.
func (c *cluster) scrape(t *testing.T) string {
	t.Helper()
	var body string
	wait(t, time.Minute, "the metrics endpoint", func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
			return fmt.Errorf("GET /metrics: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
		}
		body = string(b)
		return nil
	})
	return body
}
