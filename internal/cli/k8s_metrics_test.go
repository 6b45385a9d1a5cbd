package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/version"
)

// In a flavour with an HTTP server, --metrics-address is checked before
// anything is installed: it needs --watch, and an address the server
// cannot listen on fails the run with nothing written.
func TestK8sInstallMetricsAddress(t *testing.T) {
	listenErr := errors.New("listen tcp 127.0.0.1:9745: bind: address already in use")
	tests := []struct {
		name   string
		args   []string
		exit   int
		stderr string
		listen bool // whether the server is asked to listen
	}{
		{name: "without --watch", args: []string{"--metrics-address", "127.0.0.1:9745"}, exit: 1, stderr: "--metrics-address needs --watch"},
		{name: "an address taken", args: []string{"--watch", "--metrics-address", "127.0.0.1:9745"}, exit: 1,
			stderr: "invalid --metrics-address 127.0.0.1:9745: listen tcp 127.0.0.1:9745: bind: address already in use", listen: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Lean(version.FlavourFull)
			var served []string
			f.Metrics = func(_ context.Context, addr string, _ func(io.Writer) error, _ io.Writer) (<-chan struct{}, error) {
				served = append(served, addr)
				return nil, listenErr
			}
			binDir := filepath.Join(t.TempDir(), "bin")
			var stdout, stderr bytes.Buffer
			argv := append([]string{"cniplugins", "k8s-install", "--bin-dir", binDir, "--net-dir", t.TempDir()}, tt.args...)
			exit := Main(argv, plugin.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}, f)
			if exit != tt.exit || !strings.Contains(stderr.String(), tt.stderr) || stdout.Len() > 0 {
				t.Errorf("exit %d, stderr %q, stdout %q; want %d and %q", exit, stderr.String(), stdout.String(), tt.exit, tt.stderr)
			}
			if (len(served) > 0) != tt.listen {
				t.Errorf("the server was asked to listen on %v", served)
			}
			if _, err := os.Stat(binDir); err == nil {
				t.Error("the bin dir was written")
			}
		})
	}
}
