package etcdkv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// TestTLSFailsOverPerMember: a member whose certificate does not verify
// is skipped like any failing member; code 7 comes only when none
// verifies, naming each.
func TestTLSFailsOverPerMember(t *testing.T) {
	good := &member{}
	good.srv = httptest.NewTLSServer(good.handler(func(int, *http.Request, string) answer { return ok() }))
	t.Cleanup(good.srv.Close)
	bad := &member{}
	bad.srv = httptest.NewUnstartedServer(bad.handler(func(int, *http.Request, string) answer { return ok() }))
	bad.srv.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	bad.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes it refuses are the point
	bad.srv.StartTLS()
	t.Cleanup(bad.srv.Close)
	trusted := x509.NewCertPool()
	trusted.AddCert(good.srv.Certificate()) // bad's certificate is signed by nobody trusted

	c := New(Config{Endpoints: []string{bad.srv.URL, good.srv.URL}, Timeout: 2 * time.Second, TLS: &tls.Config{RootCAs: trusted}})
	if _, err := c.Read(Get("k")); err != nil {
		t.Fatalf("one member verifies: %v", err)
	}
	if good.sent() != 1 {
		t.Errorf("the verified member got %d requests, want 1", good.sent())
	}

	const timeout = 2 * time.Second
	c = New(Config{Endpoints: []string{bad.srv.URL, bad.srv.URL + "/"}, Timeout: timeout, TLS: &tls.Config{RootCAs: trusted}})
	start := time.Now()
	_, err := c.Read(Get("k"))
	if e := cnierr.As(err); e == nil || e.Code != cnierr.CodeInvalidConfig || strings.Count(e.Details, "unknown authority") != 2 {
		t.Fatalf("err = %v, want 7 naming each member", err)
	}
	// Not retried until the timeout: the failure comes before it.
	if time.Since(start) >= timeout {
		t.Errorf("took %s, the whole %s timeout: a certificate that does not verify is not retried", time.Since(start), timeout)
	}
}

// selfSigned is a certificate for 127.0.0.1 that no pool trusts.
func selfSigned(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// fakeAuth is a member with auth: tokens are "t1", "t2"… in the order
// they were handed out; only the newest is valid.
func fakeAuth(t *testing.T, stale string) (*member, *int) {
	issued := 0
	m := &member{}
	m.srv = httptest.NewServer(m.handler(func(_ int, r *http.Request, body string) answer {
		if r.URL.Path == "/v3/auth/authenticate" {
			if !strings.Contains(body, `"password":"pw"`) {
				return gatewayError(400, 3, "etcdserver: authentication failed, invalid user ID or password")
			}
			issued++
			return answer{status: 200, body: `{"token":"t` + string(rune('0'+issued)) + `"}`}
		}
		if got := r.Header.Get("Authorization"); got != "t"+string(rune('0'+issued)) {
			return gatewayError(401, 16, "etcdserver: invalid auth token")
		}
		if stale != "" {
			s := stale
			stale = ""
			issued++ // the user changed: every token handed out so far is old
			return gatewayError(400, 3, s)
		}
		return ok()
	}))
	t.Cleanup(m.srv.Close)
	return m, &issued
}

func TestAuth(t *testing.T) {
	dir := t.TempDir()
	m, issued := fakeAuth(t, "")
	cfg := Config{Endpoints: []string{m.srv.URL}, Timeout: 2 * time.Second, Username: "u", Password: "pw", StateDir: dir}
	for i := range 3 {
		if _, err := New(cfg).Read(Get("k")); err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
	}
	if *issued != 1 {
		t.Errorf("three execs authenticated %d times, want 1: the token is kept between execs", *issued)
	}

	t.Run("old revision", func(t *testing.T) {
		m, issued := fakeAuth(t, "etcdserver: revision of auth store is old")
		if _, err := New(Config{Endpoints: []string{m.srv.URL}, Timeout: 2 * time.Second, Username: "u", Password: "pw"}).Read(Get("k")); err != nil {
			t.Fatal(err)
		}
		if *issued != 3 { // the first token, the bump, the second token
			t.Errorf("issued = %d, want a second token after the auth change", *issued)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		m, _ := fakeAuth(t, "")
		_, err := New(Config{Endpoints: []string{m.srv.URL}, Timeout: 2 * time.Second, Username: "u", Password: "nope"}).Read(Get("k"))
		if e := cnierr.As(err); e == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Details, `"u"`) {
			t.Fatalf("err = %v, want 7 naming the user", err)
		}
	})
}

// TestMemoryAvoidsFailedMember: a member that swallowed one exec's
// request is tried last by the next execs, so a stopped member costs one
// per-try timeout, not one per exec.
func TestMemoryAvoidsFailedMember(t *testing.T) {
	dir := t.TempDir()
	hole := newMember(t, answer{wait: time.Minute})
	good := newMember(t, ok())
	cfg := Config{Endpoints: []string{hole.srv.URL, good.srv.URL}, Timeout: time.Second, StateDir: dir}
	if _, err := New(cfg).Read(Get("k")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := New(cfg).Read(Get("k")); err != nil {
			t.Fatal(err)
		}
	}
	if hole.sent() != 1 || good.sent() != 4 {
		t.Errorf("sent hole=%d good=%d, want 1 and 4", hole.sent(), good.sent())
	}
	m := &memory{Avoid: map[string]time.Time{"b": time.Now().Add(time.Minute), "c": time.Now().Add(-time.Second)}}
	if got := strings.Join(m.order([]string{"a", "b", "c"}, 1, time.Now()), ","); got != "c,a,b" {
		t.Errorf("order = %s, want c,a,b", got)
	}
}
