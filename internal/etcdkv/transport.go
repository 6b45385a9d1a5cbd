package etcdkv

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// transport sends one HTTP/1.1 request per connection at a time, keeping
// a connection that answered for the command's next request to the same
// member. It is what net/http's client would do for this one kind of
// request, without what a command that lives a few milliseconds pays for
// it in a fresh process: a goroutine to dial, two per connection, and
// code to fault in on the way. Forks of a client share it (and so its
// idle connections), concurrently.
type transport struct {
	tls  *tls.Config // nil: as the endpoint's scheme says, no client certificate
	mu   sync.Mutex
	idle map[string][]*conn // by endpoint
}

// conn is one connection to a member and its read buffer.
type conn struct {
	net.Conn
	r *bufio.Reader
}

// roundTrip POSTs body (JSON) to ep+path until deadline; gotConn tells
// whether a connection was made (and, over TLS, its handshake done), sent
// whether the whole request went out on it.
func (t *transport) roundTrip(ep, path, token string, body []byte, deadline time.Time) (data []byte, status int, gotConn, sent bool, err error) {
	c, err := t.get(ep, deadline)
	if err != nil {
		return nil, 0, false, false, err
	}
	_ = c.SetDeadline(deadline)
	host := ep[strings.Index(ep, "://")+3:] // ep is scheme://host[:port]
	req := fmt.Appendf(make([]byte, 0, 256+len(body)), "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, host, len(body))
	if token != "" {
		req = fmt.Appendf(req, "Authorization: %s\r\n", token)
	}
	req = append(append(req, "\r\n"...), body...)
	if _, err := c.Write(req); err != nil {
		c.Close()
		return nil, 0, true, false, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		c.Close()
		return nil, 0, true, true, err
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	resp.Body.Close()
	if err != nil || resp.Close || len(data) > maxAnswer || c.r.Buffered() > 0 {
		c.Close()
	} else {
		t.put(ep, c)
	}
	return data, resp.StatusCode, true, true, err
}

// get is an idle connection to ep, or a new one.
func (t *transport) get(ep string, deadline time.Time) (*conn, error) {
	for {
		t.mu.Lock()
		n := len(t.idle[ep])
		if n == 0 {
			t.mu.Unlock()
			break
		}
		c := t.idle[ep][n-1]
		t.idle[ep] = t.idle[ep][:n-1]
		t.mu.Unlock()
		if c.alive() {
			return c, nil
		}
		c.Close()
	}
	u, err := url.Parse(ep)
	if err != nil {
		return nil, err
	}
	port := cmp.Or(u.Port(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	nc, err := (&net.Dialer{KeepAlive: -1}).DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil, err
	}
	if u.Scheme == "https" {
		cfg := cmp.Or(t.tls, &tls.Config{}).Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	return &conn{Conn: nc, r: bufio.NewReader(nc)}, nil
}

// alive tells whether an idle connection is still open and silent: a
// request sent on one the member has closed meanwhile (it restarted)
// would go out whole and get no answer, which for a write that must not
// be sent twice means an outcome unknown, not a retry elsewhere.
func (c *conn) alive() bool {
	nc := c.Conn
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = rerr == syscall.EAGAIN
		return true // never wait: the answer is now
	})
	return err == nil && alive
}

// put keeps c for the next request to ep.
func (t *transport) put(ep string, c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.idle[ep] = append(t.idle[ep], c)
}
