package dockeripam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cniplugins/cniplugins/internal/logging"
)

// testConfig defines pools inside the addresses reserved for this
// package's tests (10.213.0.0/16, fd00:213::/48).
const testConfig = `{
  "poolDefinitions": {
    "shared": [{"subnet": "10.213.1.0/24"}],
    "named": {"ranges": [{"subnet": "10.213.2.0/24", "rangeStart": "10.213.2.10", "rangeEnd": "10.213.2.50"}], "exclude": ["10.213.2.10/31"]},
    "v6": [{"subnet": "fd00:213:1::/64"}]
  },
  "defaultAddressPools": [
    {"base": "10.213.128.0/23", "size": 24},
    {"base": "fd00:213:8000::/63", "size": 64}
  ]
}`

func testDriver(t *testing.T, dataDir string) *Driver {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, []byte(testConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(cfgPath, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(cfg, logging.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// memListener is an in-memory net.Listener: each Dial is one net.Pipe.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error { l.once.Do(func() { close(l.closed) }); return nil }
func (l *memListener) Addr() net.Addr {
	return &net.UnixAddr{Name: "memory", Net: "unix"}
}

func (l *memListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// served serves d's handler on an in-memory listener and returns a
// client for it.
func served(t testing.TB, d *Driver) *apiClient {
	t.Helper()
	l := newMemListener()
	srv := &http.Server{Handler: d.Handler()}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return &apiClient{c: &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}}
}

type apiClient struct{ c *http.Client }

// post sends body as dockerd does (POST, no Content-Type) and returns
// the status and the decoded reply.
func (a *apiClient) post(t testing.TB, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://plugin"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&out); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("%s: reply is not JSON: %q", path, b)
	}
	return resp.StatusCode, out
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
