package etcdkv

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Config is what a Client needs; the caller has validated it.
type Config struct {
	Endpoints []string // scheme://host:port of each member
	Timeout   time.Duration
	TLS       *tls.Config // nil: as the endpoints' scheme says, no client certificate
	Username  string      // "" for a cluster without auth
	Password  string
	First     int    // the endpoint to start from when none has failed lately
	StateDir  string // where the memory between execs lives; "" for none
	// StateKey names what a client remembers of keys (Remember): it is
	// its own whichever endpoints reach the cluster (etcdstore: the prefix
	// and node, whose fence buckets they are).
	StateKey string
}

// Client speaks to one etcd cluster until its deadline.
type Client struct {
	cfg      Config
	http     *transport
	deadline time.Time
	order    []string // the endpoints, those that failed lately last
	next     int      // index in order of the endpoint to try next
	memory   *memory
	revs     *revMemory
	token    string

	authenticating bool // a token request is on its way: no token to send, none to ask for

	answered  bool             // some member sent an HTTP answer
	connected bool             // some member accepted a connection
	tlsFailed map[string]error // members whose certificate did not verify
	last      error            // the last failure, for the error's details
}

// New prepares a Client whose deadline is now + Timeout; nothing is sent.
func New(cfg Config) *Client {
	c := &Client{cfg: cfg, deadline: time.Now().Add(cfg.Timeout), memory: loadMemory(cfg), tlsFailed: map[string]error{},
		// Straight to the member, whatever the runtime's proxy variables say.
		http: &transport{tls: cfg.TLS, idle: map[string][]*conn{}},
		revs: &revMemory{dir: cfg.StateDir, key: cfg.StateKey, seen: map[string]Seen{}}}
	c.order = c.memory.order(cfg.Endpoints, cfg.First, time.Now())
	c.token = c.memory.Token
	return c
}

// Fork returns a client for the same cluster and deadline that may be used
// concurrently with c: its own failover state, the same connections. Many
// transactions in flight at once are what lets etcd commit them in one
// disk write.
func (c *Client) Fork() *Client {
	f := *c
	f.memory = &memory{Avoid: maps.Clone(c.memory.Avoid), Token: c.memory.Token} // saves nowhere: a fork's failures are its own
	f.revs = &revMemory{seen: map[string]Seen{}}                                 // a fork remembers nothing for the next execs
	f.tlsFailed = maps.Clone(c.tlsFailed)
	return &f
}

// Extend gives cleanup after a failure a little time past the deadline:
// undoing a half-done ADD is worth a short overrun ("timeout + a little").
func (c *Client) Extend() {
	grace := min(c.cfg.Timeout/4, time.Second)
	if d := time.Now().Add(grace); d.After(c.deadline) {
		c.deadline = d
	}
}

// Txn sends a read, or a write whose every effect is pinned by its
// conditions to a value or revision that any later operation changes; an
// unanswered try goes to the next member (see the package comment).
func (c *Client) Txn(t Txn) (*Response, error) { return c.txn(t, true) }

// TxnOnce sends a write that must not be applied twice; when it may have
// reached a member without an answer, the error wraps ErrOutcomeUnknown.
func (c *Client) TxnOnce(t Txn) (*Response, error) { return c.txn(t, false) }

// Read runs ops in one read-only transaction: one round trip, one
// consistent revision, linearizable.
func (c *Client) Read(ops ...Op) (*Response, error) { return c.txn(Txn{Then: ops}, true) }

func (c *Client) txn(t Txn, resend bool) (*Response, error) {
	var out wireTxnResponse
	if err := c.do("/v3/kv/txn", t.appendJSON(nil), &out, resend); err != nil {
		return nil, err
	}
	return out.response(), nil
}

// do POSTs one request (JSON), trying the members in turn until an answer
// or the deadline; a request that must not be re-sent only while it
// certainly was not applied.
func (c *Client) do(path string, body []byte, out any, resend bool) error {
	if c.cfg.Username != "" && c.token == "" && !c.authenticating {
		if err := c.authenticate(); err != nil {
			return err
		}
	}
	reauthed := false
	for attempt := 0; ; attempt++ {
		if !time.Now().Before(c.deadline) {
			return c.unavailable()
		}
		if len(c.tlsFailed) == len(c.order) {
			return c.tlsError()
		}
		ep := c.order[c.next%len(c.order)]
		if c.tlsFailed[ep] != nil {
			c.next++
			continue
		}
		// Each try gets half the timeout: a slow but healthy cluster (an
		// fsync stall of a second or two) answers within it, and a member
		// that accepts connections but never answers (stopped, cut off)
		// leaves the other half for the rest.
		per := min(time.Until(c.deadline), max(c.cfg.Timeout/2, 300*time.Millisecond))
		data, status, gotConn, sent, err := c.http.roundTrip(ep, path, c.token, body, time.Now().Add(per))
		c.connected = c.connected || gotConn
		if err != nil {
			c.failed(ep, avoidFor)
			c.next++ // whatever the caller sends next goes elsewhere
			if tlsProblem(err) {
				c.tlsFailed[ep] = err
				continue
			}
			c.last = fmt.Errorf("%s: %w", ep, err)
			// EPIPE: the member had closed the connection before the
			// request was all written (an idle connection it dropped),
			// so it never read the request.
			if !resend && sent && !errors.Is(err, syscall.EPIPE) {
				return c.outcomeUnknown(ep, err.Error())
			}
			// A refused connection moves on to the next member at once;
			// a full round of them, or any other failure, waits a little.
			if gotConn || c.next%len(c.order) == 0 {
				c.pause(attempt)
			}
			continue
		}
		c.answered = true
		if status == http.StatusOK {
			if len(data) > maxAnswer {
				return cnierr.New(cnierr.CodeIO, "etcd's answer is too large", "endpoint=%s path=%s: more than %d MiB", ep, path, maxAnswer>>20)
			}
			if err := json.Unmarshal(data, out); err != nil {
				return cnierr.New(cnierr.CodeDecoding, "cannot decode etcd's answer", "endpoint=%s path=%s: %v", ep, path, err)
			}
			return nil
		}
		kind, msg := classify(status, data)
		c.last = fmt.Errorf("%s: HTTP %d: %s", ep, status, msg)
		switch {
		case kind == staleToken && c.cfg.Username != "" && !reauthed && !c.authenticating:
			reauthed = true
			if err := c.authenticate(); err != nil {
				return err
			}
		case kind == notProposed || kind == mayCommit:
			c.failed(ep, avoidRefusedFor)
			c.next++
			if kind == mayCommit && !resend {
				return c.outcomeUnknown(ep, msg)
			}
			c.pause(attempt)
		default:
			return refusal(kind, ep, path, c.cfg.Username, msg)
		}
	}
}

// maxAnswer bounds one answer. List pages large ranges, so only a
// transaction over keys nobody should have made that large reaches it.
const maxAnswer = 64 << 20

func (c *Client) pause(attempt int) {
	d := min(25*time.Millisecond<<min(attempt, 4), 250*time.Millisecond, time.Until(c.deadline))
	if d > 0 {
		time.Sleep(d)
	}
}

// failed remembers, for this exec and the next ones, that ep failed, to
// be avoided for d.
func (c *Client) failed(ep string, d time.Duration) { c.memory.avoid(ep, time.Now(), d) }

// authenticate exchanges username and password for a token (etcd's
// simple or JWT tokens alike) and keeps it for the next execs.
func (c *Client) authenticate() error {
	var out struct {
		Token string `json:"token"`
	}
	c.token, c.authenticating = "", true
	// A token request changes nothing anyone relies on: repeatable.
	body, _ := json.Marshal(map[string]string{"name": c.cfg.Username, "password": c.cfg.Password})
	err := c.do("/v3/auth/authenticate", body, &out, true)
	c.authenticating = false
	if err != nil {
		// etcd refusing a token request means the credentials are wrong,
		// whatever words it used.
		if e := cnierr.As(err); e != nil && e.Code == cnierr.CodeIO {
			return cnierr.New(cnierr.CodeInvalidConfig, "etcd refused the credentials", "ipam.etcd.username=%q: %s", c.cfg.Username, e.Details)
		}
		return err
	}
	c.token = out.Token
	c.memory.update(func(m *memory) { m.Token = out.Token })
	return nil
}

// tlsProblem reports a TLS failure that no retry on the same member can
// cure: a certificate the other side rejects, or one we cannot verify.
func tlsProblem(err error) bool {
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	return errors.As(err, &verify) || errors.As(err, &record) ||
		strings.Contains(err.Error(), "remote error: tls:") || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}
