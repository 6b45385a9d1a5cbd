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

	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/ops"
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

// With --etcd, the installer's metrics count what pools counts: the
// ipam-da-etcd networks under --prefix, the keys the backend reads, and
// log once each network of net.d they leave out; another prefix's network
// is never counted against this one's claims.
func TestK8sInstallMetricsEtcdPrefix(t *testing.T) {
	netDir := t.TempDir()
	conflist := func(file, name, ipam string) { writeConflist(t, netDir, file, name, ipam) }
	conflist("20-etcd.conflist", "shared-net", `{"type":"ipam-da-etcd","etcd":{"endpoints":["http://a:2379"]},"ranges":[[{"subnet":"10.9.0.0/29"}]]}`)
	conflist("30-other.conflist", "other-net", `{"type":"ipam-da-etcd","etcd":{"endpoints":["http://a:2379"],"prefix":"/other"},"ranges":[[{"subnet":"10.9.1.0/29"}]]}`)
	tests := []struct {
		args                   []string
		counted, leftOut, note string
	}{
		{nil, "shared-net", "other-net", "30-other.conflist: network other-net keeps its keys under /other/, not /cniplugins/: not listed (pass --prefix /other/)"},
		{[]string{"--prefix", "/other/"}, "other-net", "shared-net", "20-etcd.conflist: network shared-net keeps its keys under /cniplugins/, not /other/: not listed (pass --prefix /cniplugins/)"},
	}
	for _, tt := range tests {
		t.Run(tt.counted, func(t *testing.T) {
			rec := &recorder{}
			f := Lean(version.FlavourFull)
			f.Etcd = func(clusteraccess.Access) (ops.Backend, error) { return rec, nil }
			var scrapes []string
			stop := errors.New("scraped")
			// Two scrapes where the server would listen, then an error
			// that ends the run before anything is installed.
			f.Metrics = func(_ context.Context, _ string, write func(io.Writer) error, _ io.Writer) (<-chan struct{}, error) {
				for range 2 {
					var b strings.Builder
					if err := write(&b); err != nil {
						return nil, err
					}
					scrapes = append(scrapes, b.String())
				}
				return nil, stop
			}
			var stdout, stderr bytes.Buffer
			argv := append([]string{"cniplugins-full", "k8s-install", "--bin-dir", filepath.Join(t.TempDir(), "bin"), "--net-dir", netDir,
				"--watch", "--metrics-address", "127.0.0.1:0", "--etcd", "http://a:2379"}, tt.args...)
			if exit := Main(argv, plugin.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}, f); exit != 1 || !strings.Contains(stderr.String(), stop.Error()) {
				t.Fatalf("exit %d, stderr %q", exit, stderr.String())
			}
			for _, s := range scrapes {
				if !strings.Contains(s, `networks="`+tt.counted+`"}`) || strings.Contains(s, `networks="`+tt.leftOut+`"`) {
					t.Errorf("the scrape counts %s, or not %s:\n%s", tt.leftOut, tt.counted, s)
				}
			}
			if len(rec.scopes) != 1 || !strings.Contains(rec.scopes[0].Dir, tt.counted) {
				t.Errorf("the backend read %v, want %s's scope alone", rec.scopes, tt.counted)
			}
			if got := strings.Count(stderr.String(), "metrics: "+filepath.Join(netDir, tt.note)+"\n"); got != 1 {
				t.Errorf("the log says %d times that %s is left out: %q", got, tt.leftOut, stderr.String())
			}
		})
	}
}
