// Package etcdtest runs a real etcd cluster (Debian's etcd-server, any
// 3.4+) on 127.0.0.1 for tests and benchmarks: random free ports,
// temporary data directories, members that can be killed and restarted,
// and optional client TLS. Everything it starts is stopped and removed by
// Stop, and every member dies with the process that started it
// (Pdeathsig), so a crashed test leaves no etcd running.
package etcdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Binary is the etcd server the cluster runs; ETCD_BIN overrides it.
func Binary() string {
	if b := os.Getenv("ETCD_BIN"); b != "" {
		return b
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p
	}
	return "/usr/bin/etcd"
}

// Available reports whether an etcd server binary is installed.
func Available() error {
	if _, err := os.Stat(Binary()); err != nil {
		return fmt.Errorf("etcd server not found (%s): install Debian's etcd-server (scripts/test-deps.sh)", Binary())
	}
	return nil
}

// Options shapes a cluster.
type Options struct {
	Members int // default 3
	// Dir holds the data directories and certificates; default a new
	// directory under os.TempDir(). Stop removes it either way.
	Dir string
	// TLS starts every member with client certificate authentication and
	// generates a test CA, server and client certificates (see TLSFiles).
	TLS bool
	// HeartbeatMS and ElectionMS tune raft (defaults 50 and 500: a dead
	// leader is replaced in about a second).
	HeartbeatMS, ElectionMS int
	// Log receives the members' output (default discarded).
	Log func(format string, args ...any)
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Members []*Member
	TLS     *TLSFiles // nil without Options.TLS
	dir     string
	opts    Options
	client  *http.Client
}

// Member is one etcd process.
type Member struct {
	Name      string
	ClientURL string
	PeerURL   string
	DataDir   string
	args      []string
	mu        sync.Mutex
	cmd       *exec.Cmd
	exited    chan struct{}
	log       *bytes.Buffer
}

// Start starts a cluster and waits until it has a leader and serves
// linearizable reads.
func Start(opts Options) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.Members == 0 {
		opts.Members = 3
	}
	if opts.HeartbeatMS == 0 {
		opts.HeartbeatMS = 50
	}
	if opts.ElectionMS == 0 {
		opts.ElectionMS = 500
	}
	dir := opts.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "etcdtest-"); err != nil {
			return nil, err
		}
	}
	c := &Cluster{dir: dir, opts: opts, client: &http.Client{Timeout: 2 * time.Second}}
	// Ports are picked free and released before etcd binds them; another
	// process can take one meanwhile, so a failed start is retried with
	// fresh ports.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.start(attempt); err == nil {
			return c, nil
		}
		c.kill()
	}
	c.Stop()
	return nil, err
}

func (c *Cluster) start(attempt int) error {
	if c.opts.TLS && c.TLS == nil {
		files, err := WriteTLS(filepath.Join(c.dir, "tls"))
		if err != nil {
			return err
		}
		c.TLS = files
		if c.client, err = files.HTTPClient(); err != nil {
			return err
		}
		c.client.Timeout = 2 * time.Second
	}
	scheme := "http"
	if c.TLS != nil {
		scheme = "https"
	}
	ports, err := freePorts(2 * c.opts.Members)
	if err != nil {
		return err
	}
	c.Members = nil
	var initial []string
	for i := 0; i < c.opts.Members; i++ {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			DataDir:   filepath.Join(c.dir, fmt.Sprintf("a%d-m%d", attempt, i)),
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	token := fmt.Sprintf("etcdtest-%d-%d", os.Getpid(), time.Now().UnixNano())
	for _, m := range c.Members {
		m.args = []string{
			"--name", m.Name, "--data-dir", m.DataDir,
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", token,
			"--heartbeat-interval", fmt.Sprint(c.opts.HeartbeatMS), "--election-timeout", fmt.Sprint(c.opts.ElectionMS),
			"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
		}
		if c.TLS != nil {
			m.args = append(m.args, "--client-cert-auth", "--trusted-ca-file", c.TLS.CA,
				"--cert-file", c.TLS.ServerCert, "--key-file", c.TLS.ServerKey)
		}
		if err := m.launch(); err != nil {
			return err
		}
	}
	return c.WaitReady(30 * time.Second)
}

// freePorts asks the kernel for n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (m *Member) launch() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cmd := exec.Command(Binary(), m.args...)
	m.log = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: m.log}, &lockedWriter{w: m.log}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start etcd %s: %w", m.Name, err)
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(m.exited)
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() > 1<<20 { // keep the tail of a chatty member bounded
		l.w.Reset()
	}
	return l.w.Write(p)
}

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Kill SIGKILLs the member and waits for it to be gone.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Pause SIGSTOPs the member: its sockets stay open and accept
// connections, and nothing answers (a hung process, a black hole).
func (m *Member) Pause() error { return m.signal(syscall.SIGSTOP) }

// Resume SIGCONTs a paused member.
func (m *Member) Resume() error { return m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) error {
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("member %s is not running", m.Name)
	}
	return cmd.Process.Signal(sig)
}

// Restart starts a killed member again on the same ports and data.
func (m *Member) Restart() error {
	if m.Running() {
		return fmt.Errorf("member %s is running", m.Name)
	}
	// The data directory now holds the cluster: rejoin, don't bootstrap.
	args := append([]string(nil), m.args...)
	for i := range args {
		if args[i] == "--initial-cluster-state" {
			args[i+1] = "existing"
		}
	}
	m.args = args
	return m.launch()
}

// Output is the member's recent log, for failure messages.
func (m *Member) Output() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return ""
	}
	return m.log.String()
}

// Endpoints lists the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = m.ClientURL
	}
	return out
}

// Dir is the directory holding the data directories and certificates.
func (c *Cluster) Dir() string { return c.dir }

func (c *Cluster) kill() {
	for _, m := range c.Members {
		m.Kill()
	}
}

// Stop kills every member and removes every file the cluster made.
func (c *Cluster) Stop() {
	c.kill()
	_ = os.RemoveAll(c.dir)
}

// status is the part of /v3/maintenance/status this package reads.
type status struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader string `json:"leader"`
}

// Post sends one v3 gateway request to the member and decodes the answer
// into out (nil to discard it).
func (c *Cluster) Post(m *Member, path string, in, out any) error {
	return c.PostAuth(m, "", path, in, out)
}

// PostAuth is Post with an auth token.
func (c *Cluster) PostAuth(m *Member, token, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, m.ClientURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s: %s", m.ClientURL, path, resp.Status, buf.String())
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(buf.Bytes(), out)
}

// Leader returns the member that currently leads, asking the running
// members.
func (c *Cluster) Leader() (*Member, error) {
	ids := map[string]*Member{}
	leader := ""
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		var st status
		if err := c.Post(m, "/v3/maintenance/status", struct{}{}, &st); err != nil {
			continue
		}
		ids[st.Header.MemberID] = m
		if st.Leader != "" && st.Leader != "0" {
			leader = st.Leader
		}
	}
	if m, ok := ids[leader]; ok {
		return m, nil
	}
	return nil, errors.New("no member reports a running leader")
}

// WaitReady waits until a linearizable read succeeds through every running
// member (the cluster has a leader and quorum).
func (c *Cluster) WaitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		last = nil
		for _, m := range c.Members {
			if !m.Running() {
				continue
			}
			if err := c.Post(m, "/v3/kv/range", map[string]string{"key": "AA=="}, nil); err != nil {
				last = fmt.Errorf("%s: %w", m.Name, err)
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			var logs strings.Builder
			for _, m := range c.Members {
				fmt.Fprintf(&logs, "--- %s:\n%s\n", m.Name, tail(m.Output(), 2000))
			}
			return fmt.Errorf("etcd cluster not ready after %s: %v\n%s", timeout, last, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Keys lists every key under prefix (for leak checks).
func (c *Cluster) Keys(prefix string) ([]string, error) {
	kvs, err := c.Values(prefix)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(kvs)), nil
}

// Count counts the keys under prefix (etcd counts; nothing is sent back).
func (c *Cluster) Count(prefix string) (int, error) {
	var resp struct {
		Count int `json:"count,string"`
	}
	end := []byte(prefix)
	end[len(end)-1]++
	err := errors.New("no member running")
	for _, m := range c.Members {
		if m.Running() {
			if err = c.Post(m, "/v3/kv/range", map[string]any{"key": []byte(prefix), "range_end": end, "count_only": true}, &resp); err == nil {
				break
			}
		}
	}
	return resp.Count, err
}

// Values reads every key under prefix with its value.
// Any running member that answers will do (one may be paused).
func (c *Cluster) Values(prefix string) (map[string]string, error) {
	var resp struct {
		Kvs []struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	end := []byte(prefix)
	end[len(end)-1]++
	err := errors.New("no member running")
	for _, m := range c.Members {
		if m.Running() {
			if err = c.Post(m, "/v3/kv/range", map[string]any{"key": []byte(prefix), "range_end": end}, &resp); err == nil {
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out, nil
}
