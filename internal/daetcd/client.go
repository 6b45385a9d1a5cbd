package daetcd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// client speaks etcd's v3 JSON gateway over net/http: the official Go
// client would cost every exec about 2.8 ms of package initialisation and
// 12 MB of memory (docs/etcd.md, "Client"), more than the whole budget of an
// ADD. It holds one deadline for the whole CNI command: every request it
// sends, retries included, ends by then.
//
// Reads are retried on the next endpoint until an answer or the deadline.
// A write is sent again only when it certainly was not applied: no
// connection was made, or the member refused it before proposing it (no
// leader, too many requests, proposal dropped, an expired token). Once a
// write may have reached a member, a second copy is never sent, as etcd's
// own client does: a follower forwards the first copy to the leader, and
// it can commit after a retry has succeeded and later operations have run
// (a DEL's copy landing after the same container's next ADD would delete
// that live claim). Such a write ends the command with code 11, "outcome
// unknown"; the runtime's retry of the command, or GC, finishes the job.
type client struct {
	endpoints []string
	timeout   time.Duration
	http      *http.Client
	username  string
	password  string
	token     string
	deadline  time.Time
	next      int // index of the endpoint to try next

	answered  bool  // some endpoint sent an HTTP answer
	connected bool  // some endpoint accepted a connection
	last      error // the last failure, for the error's details
}

// errUnreachable marks code 11 errors that mean the cluster could not be
// reached at all, errNoQuorum those where members answered but could not
// serve (STATUS reports the latter as 50).
var (
	errUnreachable = errors.New("etcd unreachable")
	errNoQuorum    = errors.New("etcd has no quorum")
)

// newClient prepares a client whose deadline is now + timeout. It reads
// the TLS and password files; nothing is sent yet.
func newClient(c *etcdConfig) (*client, error) {
	cl := &client{endpoints: c.endpoints, timeout: c.timeout, username: c.username, next: c.firstEndpoint()}
	cl.deadline = time.Now().Add(c.timeout)
	tr := &http.Transport{
		Proxy:               nil, // etcd is reached directly, whatever the runtime's proxy variables say
		DialContext:         (&net.Dialer{Timeout: c.timeout, KeepAlive: -1}).DialContext,
		MaxIdleConnsPerHost: 4,
		DisableCompression:  true,
	}
	if c.tls != nil {
		cfg, err := c.tls.config()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	cl.http = &http.Client{Transport: tr}
	if c.passwordFile != "" {
		b, err := os.ReadFile(c.passwordFile)
		if err != nil {
			return nil, cnierr.InvalidConfig("ipam.etcd.passwordFile", c.passwordFile, "cannot be read: "+err.Error())
		}
		cl.password = strings.TrimRight(string(b), "\r\n")
	}
	return cl, nil
}

// config loads the TLS files.
func (t *tlsFiles) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, cnierr.InvalidConfig("ipam.etcd.tls.caFile", t.CAFile, "cannot be read: "+err.Error())
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, cnierr.InvalidConfig("ipam.etcd.tls.caFile", t.CAFile, "holds no PEM certificate")
		}
	}
	if t.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, cnierr.InvalidConfig("ipam.etcd.tls.certFile", t.CertFile, "cannot load the key pair: "+err.Error())
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// extend gives cleanup after a failure a little time past the deadline:
// undoing a half-done ADD is worth a short overrun ("timeout + a little").
func (c *client) extend() {
	grace := min(c.timeout/4, time.Second)
	if d := time.Now().Add(grace); d.After(c.deadline) {
		c.deadline = d
	}
}

// txn sends a transaction.
func (c *client) txn(t txnRequest) (*txnResponse, error) {
	var out txnResponse
	return &out, c.do("/v3/kv/txn", t, &out, t.writes())
}

// read runs range operations in one read-only transaction: one round trip,
// one consistent revision, linearizable.
func (c *client) read(ops ...requestOp) (*txnResponse, error) {
	return c.txn(txnRequest{Success: ops})
}

// do POSTs one request, retrying on the next endpoint until an answer or
// the deadline; a write only while it certainly was not applied.
func (c *client) do(path string, in, out any, write bool) error {
	body, err := json.Marshal(in)
	if err != nil {
		return cnierr.New(cnierr.CodeInternal, "cannot encode an etcd request", "%v", err)
	}
	if c.username != "" && c.token == "" {
		if err := c.authenticate(); err != nil {
			return err
		}
	}
	reauthed := false
	for attempt := 0; ; attempt++ {
		if !time.Now().Before(c.deadline) {
			return c.unavailable()
		}
		ep := c.endpoints[c.next%len(c.endpoints)]
		data, status, gotConn, sent, err := c.post(ep, path, body, write)
		c.connected = c.connected || gotConn
		if err != nil {
			if tlsProblem(err) {
				return cnierr.New(cnierr.CodeInvalidConfig, "TLS with etcd failed", "ipam.etcd.tls: %s: %v", ep, err)
			}
			c.last = fmt.Errorf("%s: %w", ep, err)
			// EPIPE: the member had closed the connection before the
			// request was all written (an idle connection it dropped, a
			// TLS client it refused), so it never read the request.
			if write && sent && !errors.Is(err, syscall.EPIPE) {
				return c.outcomeUnknown(ep, err.Error())
			}
			c.next++
			// A refused connection moves on to the next endpoint at once;
			// a full round of them, or any other failure, waits a little.
			if gotConn || c.next%len(c.endpoints) == 0 {
				c.pause(attempt)
			}
			continue
		}
		c.answered = true
		if status == http.StatusOK {
			if err := json.Unmarshal(data, out); err != nil {
				return cnierr.New(cnierr.CodeDecoding, "cannot decode etcd's answer", "endpoint=%s path=%s: %v", ep, path, err)
			}
			return nil
		}
		var ge gatewayError
		_ = json.Unmarshal(data, &ge)
		msg := ge.Error
		if msg == "" {
			msg = strings.TrimSpace(string(data))
		}
		c.last = fmt.Errorf("%s: HTTP %d: %s", ep, status, msg)
		switch {
		case ge.Code == grpcUnauthenticated && c.username != "" && !reauthed:
			reauthed, c.token = true, "" // the token expired: one new one
			if err := c.authenticate(); err != nil {
				return err
			}
		case spaceExceeded(msg):
			return cnierr.New(cnierr.CodeIO, "etcd's database is full (mvcc: database space exceeded)",
				"endpoint=%s: %s; compact and defragment etcd, or raise its --quota-backend-bytes, then disarm the NOSPACE alarm", ep, msg)
		case notProposed(ge.Code, msg):
			c.next++
			c.pause(attempt)
		case write && transient(status, ge.Code):
			return c.outcomeUnknown(ep, msg)
		case transient(status, ge.Code):
			c.next++
			c.pause(attempt)
		case ge.Code == grpcPermissionDenied || ge.Code == grpcUnauthenticated:
			return cnierr.New(cnierr.CodeInvalidConfig, "etcd refused the credentials", "ipam.etcd.username=%q endpoint=%s: %s", c.username, ep, msg)
		case status == http.StatusNotFound:
			return cnierr.New(cnierr.CodeInvalidConfig, "endpoint does not serve etcd's v3 JSON gateway", "ipam.etcd.endpoints: %s%s: HTTP 404", ep, path)
		default:
			return cnierr.New(cnierr.CodeIO, "etcd refused the request", "endpoint=%s path=%s: %s", ep, path, msg)
		}
	}
}

// gRPC status codes the gateway reports.
const (
	grpcDeadlineExceeded   = 4
	grpcPermissionDenied   = 7
	grpcFailedPrecondition = 9
	grpcResourceExhausted  = 8
	grpcAborted            = 10
	grpcUnavailable        = 14
	grpcUnauthenticated    = 16
)

// notProposed: the member refused the request before proposing it to
// raft, so it was not and will not be applied, and any request (a write
// too) may go to the next member: no leader, a learner, overload, or a
// proposal dropped during a leadership transfer.
func notProposed(code int, msg string) bool {
	for _, m := range []string{"no leader", "too many requests", "raft proposal dropped", "not supported for learner", "rpc not supported for learner"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return code == grpcFailedPrecondition && strings.Contains(msg, "learner")
}

// spaceExceeded: etcd has raised its NOSPACE alarm and takes no writes
// until an operator frees space; waiting out the timeout cannot help.
func spaceExceeded(msg string) bool { return strings.Contains(msg, "database space exceeded") }

// outcomeUnknown is code 11 for a write that may have been applied.
func (c *client) outcomeUnknown(ep, why string) error {
	return cnierr.New(cnierr.CodeTryAgainLater, "etcd did not confirm a write that it may have applied",
		"endpoints=%s timeout=%s: %s: %s; not sent again, so that a late copy cannot undo a later operation: retry the command (DEL and GC clean what it may have left)",
		strings.Join(c.endpoints, ","), c.timeout, ep, why)
}

// transient: the member could not serve the request now (no leader, no
// quorum, a leader change, overload); another try may succeed.
func transient(status, code int) bool {
	switch code {
	case grpcDeadlineExceeded, grpcResourceExhausted, grpcAborted, grpcUnavailable:
		return true
	}
	return status >= 500 && code == 0
}

// post sends one request to one endpoint; gotConn tells whether a
// connection was made, sent whether the whole request went out on it (a
// request cut off while being written, as when the member drops a TLS
// client it does not accept, was not read by anyone).
func (c *client) post(ep, path string, body []byte, write bool) (data []byte, status int, gotConn, sent bool, err error) {
	// Each try of a read gets at most a third of the timeout, so a member
	// that accepts connections but never answers (cut off from the others)
	// leaves time to try the rest. A write that reached a member is never
	// sent again, so it waits longer, half the timeout: a slow but healthy
	// cluster (an fsync stall of a second or two) still commits it, and a
	// stopped member costs the command half its budget, not all of it.
	share := c.timeout / 3
	if write {
		share = c.timeout / 2
	}
	per := min(time.Until(c.deadline), max(share, 300*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), per)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { gotConn = true },
		WroteRequest: func(w httptrace.WroteRequestInfo) { sent = w.Err == nil },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, false, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, gotConn, sent, err
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	return data, resp.StatusCode, true, true, err
}

// maxAnswer bounds one answer: the largest this package asks for is a
// pool's keys (CLI listings), tens of MB at most.
const maxAnswer = 256 << 20

func (c *client) pause(attempt int) {
	d := min(25*time.Millisecond<<min(attempt, 4), 250*time.Millisecond, time.Until(c.deadline))
	if d > 0 {
		time.Sleep(d)
	}
}

// tlsProblem reports a TLS failure that no retry can cure: a certificate
// the other side rejects, or one we cannot verify.
func tlsProblem(err error) bool {
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	var record tls.RecordHeaderError
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &record) ||
		strings.Contains(err.Error(), "remote error: tls:") || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// unavailable is code 11, naming every endpoint.
func (c *client) unavailable() error {
	eps := strings.Join(c.endpoints, ",")
	if !c.answered && !c.connected {
		return cnierr.Wrap(cnierr.New(cnierr.CodeTryAgainLater, "etcd unreachable",
			"endpoints=%s: %v", eps, c.last), errUnreachable)
	}
	return cnierr.Wrap(cnierr.New(cnierr.CodeTryAgainLater, "etcd did not answer in time (no quorum?)",
		"endpoints=%s timeout=%s: %v", eps, c.timeout, c.last), errNoQuorum)
}

// authenticate exchanges username and password for a token (etcd's
// simple or JWT tokens alike).
func (c *client) authenticate() error {
	c.token = ""
	user := c.username
	c.username = "" // no recursion into authenticate from do
	defer func() { c.username = user }()
	var out struct {
		Token string `json:"token"`
	}
	// A token request changes nothing anyone relies on: repeatable.
	err := c.do("/v3/auth/authenticate", map[string]string{"name": user, "password": c.password}, &out, false)
	if e := (*types.Error)(nil); errors.As(err, &e) && e.Code == cnierr.CodeIO {
		return cnierr.New(cnierr.CodeInvalidConfig, "etcd refused the credentials", "ipam.etcd.username=%q: %s", user, e.Details)
	}
	if err != nil {
		return err
	}
	c.token = out.Token
	return nil
}
