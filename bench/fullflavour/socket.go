package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/testdockerd"
)

// driverProc is a running docker-ipam.
type driverProc struct {
	cmd    *exec.Cmd
	socket string
	client *http.Client
}

// startDriver runs the full binary's docker-ipam on socket with a data
// directory of its own and the given config.
func startDriver(bin, socket, dataDir, config string) (*driverProc, error) {
	cfg := dataDir + "-config.json"
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(dataDir + "-driver.log")
	if err != nil {
		return nil, err
	}
	// Called by its own name: the busybox form the installed binary has.
	cmd := exec.Command(bin, "docker-ipam", "--socket", socket, "--config", cfg, "--data-dir", dataDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &driverProc{cmd: cmd, socket: socket, client: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
	}}}
	if err := testdockerd.WaitSocket(socket, 10*time.Second); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

func (d *driverProc) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
	_ = os.Remove(d.socket)
}

// post is one API call, as dockerd makes it (POST, no Content-Type).
func (d *driverProc) post(path string, req, resp any) error {
	b, _ := json.Marshal(req)
	r, err := http.NewRequest(http.MethodPost, "http://plugin"+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	r.Host = ""
	res, err := d.client.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || strings.Contains(string(body), `"Error"`) {
		return fmt.Errorf("%s: %d %s", path, res.StatusCode, body)
	}
	return json.Unmarshal(body, resp)
}

// measureSocket times RequestAddress+ReleaseAddress pairs on one pool;
// each pair takes the pool directory's lock twice and writes a
// reservation, the cursor and the index, as a CNI ADD+DEL does.
func measureSocket(bin, tmp string, n int) ([]time.Duration, error) {
	d, err := startDriver(bin, filepath.Join(tmp, "bench.sock"), filepath.Join(tmp, "socket-data"), `{}`)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	var pool struct{ PoolID string }
	if err := d.post("/IpamDriver.RequestPool", map[string]any{"AddressSpace": "cniplugins-local", "Pool": "10.213.251.0/24"}, &pool); err != nil {
		return nil, err
	}
	var pairs []time.Duration
	for i := range n + 20 {
		start := time.Now()
		var addr struct{ Address string }
		if err := d.post("/IpamDriver.RequestAddress", map[string]any{"PoolID": pool.PoolID, "Address": "", "Options": nil}, &addr); err != nil {
			return nil, err
		}
		ip, _, _ := strings.Cut(addr.Address, "/")
		var none struct{}
		if err := d.post("/IpamDriver.ReleaseAddress", map[string]any{"PoolID": pool.PoolID, "Address": ip}, &none); err != nil {
			return nil, err
		}
		if i >= 20 {
			pairs = append(pairs, time.Since(start))
		}
	}
	return pairs, nil
}
