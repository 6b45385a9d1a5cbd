package dockeripam

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// rawPost writes a request byte for byte as dockerd 20.10's plugin client
// does (empty Host header, no Content-Type) on a real unix socket.
func rawPost(t *testing.T, socket, path, body string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "POST " + path + " HTTP/1.1\r\n" +
		"Host: \r\n" +
		"User-Agent: Go-http-client/1.1\r\n" +
		"Content-Length: " + itoa(len(body)) + "\r\n" +
		"Accept: application/vnd.docker.plugins.v1.2+json\r\n" +
		"Accept-Encoding: gzip\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestWireFormOnUnixSocket(t *testing.T) {
	d := testDriver(t, t.TempDir())
	socket := filepath.Join(t.TempDir(), "cnpd.sock")
	l, err := Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, l, socket) }()

	fi, err := os.Stat(socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("socket mode %v, want socket 0660", fi.Mode())
	}
	if st := fi.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != 0 || st.Gid != 0) {
		t.Errorf("socket owned by %d:%d, want root", st.Uid, st.Gid)
	}

	cases := []struct{ path, body, want string }{
		{"/Plugin.Activate", "", `{"Implements":["IpamDriver"]}`},
		{"/IpamDriver.GetCapabilities", "", `{"RequiresMACAddress":false,"RequiresRequestReplay":false}`},
		{"/IpamDriver.GetDefaultAddressSpaces", "", `{"LocalDefaultAddressSpace":"cniplugins-local","GlobalDefaultAddressSpace":"cniplugins-global"}`},
		{"/IpamDriver.RequestPool", `{"AddressSpace":"cniplugins-local","Options":{},"Pool":"10.213.1.0/24","SubPool":"","V6":false}`, `{"PoolID":"shared,10.213.1.0/24","Pool":"10.213.1.0/24","Data":{}}`},
		{"/IpamDriver.RequestAddress", `{"Address":"","Options":{"RequestAddressType":"com.docker.network.gateway"},"PoolID":"shared,10.213.1.0/24"}`, `{"Address":"10.213.1.1/24","Data":{}}`},
		{"/IpamDriver.RequestAddress", `{"Address":"10.213.1.9","Options":null,"PoolID":"shared,10.213.1.0/24"}`, `{"Address":"10.213.1.9/24","Data":{}}`},
		{"/IpamDriver.RequestAddress", `{"Address":"10.213.1.9","Options":null,"PoolID":"shared,10.213.1.0/24"}`, `"Error":"requested address is already reserved`},
		{"/IpamDriver.ReleaseAddress", `{"Address":"10.213.1.9","PoolID":"shared,10.213.1.0/24"}`, `{}`},
		{"/IpamDriver.RequestPool", `{"Pool":`, `{"Err":"malformed request`},
	}
	for _, c := range cases {
		resp, body := rawPost(t, socket, c.path, c.body)
		if !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d %q, want %q", c.path, c.body, resp.StatusCode, body, c.want)
		}
		if strings.Contains(body, `"Err"`) == (resp.StatusCode == http.StatusOK) {
			t.Errorf("%s: status %d with body %q: dockerd reads Err only from non-200 replies", c.path, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != contentType {
			t.Errorf("%s: Content-Type %q", c.path, ct)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Errorf("socket left after shutdown: %v", err)
	}
}

func TestListenReplacesOnlyStaleSockets(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // a crashed driver's socket: the file stays, nobody answers
	if l, err = Listen(stale); err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	defer l.Close()
	if _, err := Listen(stale); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("live socket replaced: %v", err)
	}
	file := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file replaced: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "x" {
		t.Error("regular file changed")
	}
}

// Pools, reference counts and addresses survive the driver: a new driver
// on the same data directory carries on where the old one stopped. Two
// drivers never share one.
func TestStateSurvivesRestart(t *testing.T) {
	dataDir := t.TempDir()
	d := testDriver(t, dataDir)
	if _, err := testDriver2(dataDir); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second driver on one data dir: %v", err)
	}
	r, err := d.RequestPool(RequestPoolRequest{Pool: "10.213.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.RequestPool(RequestPoolRequest{Pool: "10.213.1.0/24"}); err != nil {
		t.Fatal(err)
	}
	gw, _ := d.RequestAddress(RequestAddressRequest{PoolID: r.PoolID, Options: map[string]string{RequestAddressType: GatewayRequest}})
	a, _ := d.RequestAddress(RequestAddressRequest{PoolID: r.PoolID})
	d.Close()

	d2 := testDriver(t, dataDir)
	if p := d2.st.Pools[r.PoolID]; p == nil || p.Refs != 2 || len(p.Gateways) != 1 {
		t.Fatalf("state after restart: %+v", p)
	}
	b, err := d2.RequestAddress(RequestAddressRequest{PoolID: r.PoolID})
	if err != nil || b.Address == a.Address || b.Address == gw.Address {
		t.Fatalf("after restart got %v (%v), before %s and gateway %s", b, err, a.Address, gw.Address)
	}
	if err := d2.ReleaseAddress(ReleaseAddressRequest{PoolID: r.PoolID, Address: strings.Split(a.Address, "/")[0]}); err != nil {
		t.Errorf("release of an address reserved before the restart: %v", err)
	}
	for range 2 {
		if err := d2.ReleasePool(ReleasePoolRequest{PoolID: r.PoolID}); err != nil {
			t.Fatal(err)
		}
	}
	if len(d2.st.Pools) != 0 {
		t.Errorf("pools left: %v", d2.st.Pools)
	}
}

func testDriver2(dataDir string) (*Driver, error) {
	cfg, err := LoadConfig("", dataDir)
	if err != nil {
		return nil, err
	}
	return Open(cfg, nil)
}

// A state write that fails leaves memory as it was: the reply is an
// error and nothing changed.
func TestFailedStateWriteChangesNothing(t *testing.T) {
	dataDir := t.TempDir()
	d := testDriver(t, dataDir)
	tmp := filepath.Join(dataDir, stateDirName, "state.json.tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil { // WriteFile on a directory fails, as root too
		t.Fatal(err)
	}
	if _, err := d.RequestPool(RequestPoolRequest{Pool: "10.213.1.0/24"}); err == nil {
		t.Fatal("RequestPool succeeded without its state write")
	}
	if len(d.st.Pools) != 0 {
		t.Errorf("memory holds a pool the disk does not: %v", d.st.Pools)
	}
}
