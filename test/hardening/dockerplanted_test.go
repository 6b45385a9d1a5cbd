package hardening

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// dockerDriver is the full flavour's Docker IPAM driver on dataDir,
// serving socket.
type dockerDriver struct {
	socket string
	cmd    *exec.Cmd
	log    bytes.Buffer
	exited chan struct{}
}

// startDockerDriver runs bin's driver; it reports whether the driver came
// up (false: it exited, its output in log).
func startDockerDriver(t *testing.T, bin, dataDir string) (*dockerDriver, bool) {
	t.Helper()
	d := &dockerDriver{socket: filepath.Join(t.TempDir(), "ipam.sock"), exited: make(chan struct{})}
	d.cmd = exec.Command(bin, "docker-ipam", "--socket", d.socket, "--data-dir", dataDir)
	d.cmd.Stdout, d.cmd.Stderr = &d.log, &d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.exited
	})
	// Bounded: up to 30 s for the driver to answer or exit.
	for range 1500 {
		select {
		case <-d.exited:
			return d, false
		default:
		}
		if c, err := net.Dial("unix", d.socket); err == nil {
			c.Close()
			return d, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the driver neither answered nor exited: %s", d.log.String())
	return d, false
}

// requestPool is Docker's RequestPool; the driver's error, "" on success.
func (d *dockerDriver) requestPool(t *testing.T, subnet string) string {
	t.Helper()
	client := http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", d.socket)
		}}}
	body, _ := json.Marshal(map[string]any{"AddressSpace": "cniplugins-local", "Pool": subnet})
	resp, err := client.Post("http://plugin/IpamDriver.RequestPool", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply struct{ Error, Err string }
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	return reply.Error + reply.Err
}

// The Docker driver's state (<dataDir>/_docker: lock, state.json and the
// state.json.tmp it renames into place) is never written or read through
// a planted link, and a _docker that is a link or another user's
// directory is refused before anything in it is opened.
func TestDockerStatePlanted(t *testing.T) {
	u := newLocalUser(t)
	bin, err := testkit.Build(t.TempDir(), "full") // the driver is the full flavour's
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		plant func(t *testing.T, state string, v victim)
		start bool // the driver comes up (the planted file is written later)
	}{
		{name: "state.json.tmp", start: true, plant: func(t *testing.T, state string, v victim) {
			plantLink(t, filepath.Join(state, "state.json.tmp"), v.file)
		}},
		{name: "state.json", plant: func(t *testing.T, state string, v victim) {
			plantLink(t, filepath.Join(state, "state.json"), v.file)
		}},
		{name: "lock", plant: func(t *testing.T, state string, v victim) {
			plantLink(t, filepath.Join(state, "lock"), v.file)
		}},
		{name: "_docker", plant: func(t *testing.T, state string, v victim) {
			plantLink(t, state, v.dir)
		}},
		{name: "_docker owned by another user", plant: func(t *testing.T, state string, v victim) {
			plantLink(t, filepath.Join(state, "state.json.tmp"), v.file)
			if err := os.Chown(state, u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVictim(t)
			dataDir := t.TempDir()
			state := filepath.Join(dataDir, "_docker")
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, state, v)
			d, up := startDockerDriver(t, bin, dataDir)
			switch {
			case up != tt.start:
				t.Errorf("driver up: %v, want %v: %s", up, tt.start, d.log.String())
			case up:
				if msg := d.requestPool(t, "10.213.60.0/24"); msg == "" {
					t.Errorf("RequestPool succeeded through a planted state.json.tmp")
				}
			case !strings.Contains(d.log.String(), state):
				t.Errorf("the driver's refusal does not name %s: %s", state, d.log.String())
			}
			v.unchanged(t, tt.name)
		})
	}
}
