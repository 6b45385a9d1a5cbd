package etcdkv

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

var (
	hangup   = answer{hangup: true}
	timedOut = gatewayError(503, 14, "etcdserver: request timed out")
	noLeader = gatewayError(503, 14, "etcdserver: no leader")
	dropped  = gatewayError(500, 2, "raft proposal dropped")
	learner  = gatewayError(400, 9, "etcdserver: rpc not supported for learner")
	busy     = gatewayError(429, 8, "etcdserver: too many requests")
	nospace  = gatewayError(500, 8, "etcdserver: mvcc: database space exceeded")
	tooLong  = gatewayError(500, 8, "grpc: received message larger than max (5242880 vs. 4194304)")
)

// TestRetries: which failures move a request on to the next member, by
// how it was sent, and that a TxnOnce write which may have reached a
// member is never sent again.
func TestRetries(t *testing.T) {
	once := func(c *Client) error { _, err := c.TxnOnce(Txn{Then: []Op{Delete("k")}}); return err }
	exact := func(c *Client) error {
		_, err := c.Txn(Txn{If: []Cmp{ModIs("k", 5)}, Then: []Op{Delete("k")}})
		return err
	}
	read := func(c *Client) error { _, err := c.Read(Get("k")); return err }
	for _, tc := range []struct {
		name      string
		send      func(*Client) error
		first     answer
		wantCode  uint // 0: success
		wantMsg   string
		wantSent2 int // requests the second member got
	}{
		{"once, connection lost after sending", once, hangup, cnierr.CodeTryAgainLater, "may have applied", 0},
		{"exact, connection lost after sending", exact, hangup, 0, "", 1},
		{"read, connection lost", read, hangup, 0, "", 1},
		{"once, request timed out", once, timedOut, cnierr.CodeTryAgainLater, "may have applied", 0},
		{"exact, request timed out", exact, timedOut, 0, "", 1},
		{"read, request timed out", read, timedOut, 0, "", 1},
		{"once, no leader", once, noLeader, 0, "", 1},
		{"once, raft proposal dropped", once, dropped, 0, "", 1},
		{"once, learner", once, learner, 0, "", 1},
		{"once, too many requests", once, busy, 0, "", 1},
		{"once, database space exceeded", once, nospace, cnierr.CodeIO, "database space exceeded", 0},
		{"read, answer over the gateway's limit", read, tooLong, cnierr.CodeIO, "too large", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newMember(t, tc.first), newMember(t, ok())
			const timeout = 3 * time.Second
			c := client(t, timeout, a, b)
			start := time.Now()
			err := tc.send(c)
			switch e := cnierr.As(err); {
			case tc.wantCode == 0 && err != nil:
				t.Fatalf("err = %v, want success", err)
			case tc.wantCode != 0 && (e == nil || e.Code != tc.wantCode || !strings.Contains(e.Msg+e.Details, tc.wantMsg)):
				t.Fatalf("err = %v, want code %d saying %q", err, tc.wantCode, tc.wantMsg)
			}
			if tc.wantMsg == "may have applied" && !errors.Is(err, ErrOutcomeUnknown) {
				t.Errorf("err = %v, want ErrOutcomeUnknown", err)
			}
			if got := a.sent(); got != 1 {
				t.Errorf("first member got %d requests, want 1", got)
			}
			if got := b.sent(); got != tc.wantSent2 {
				t.Errorf("second member got %d requests, want %d", got, tc.wantSent2)
			}
			// A definite answer fails at once: it never waits out the
			// timeout (the fakes answer in microseconds, so the whole
			// timeout is the margin).
			if tc.wantCode != 0 && time.Since(start) >= timeout {
				t.Errorf("failing took %s, the whole %s timeout: a definite answer must fail at once", time.Since(start), timeout)
			}
		})
	}
}

// TestSlowClusterIsWaitedFor: an answer that takes a while, within the
// per-try share of the timeout, is waited for, not abandoned and re-sent.
func TestSlowClusterIsWaitedFor(t *testing.T) {
	slow := answer{status: 200, body: okTxn, wait: 700 * time.Millisecond}
	a, b := newMember(t, slow), newMember(t, slow)
	c := client(t, 2*time.Second, a, b)
	if _, err := c.TxnOnce(Txn{Then: []Op{Put("k", []byte("v"))}}); err != nil {
		t.Fatal(err)
	}
	if a.sent()+b.sent() != 1 {
		t.Errorf("sent %d+%d copies, want 1", a.sent(), b.sent())
	}
}

func TestErrors(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	for _, tc := range []struct {
		name     string
		answer   answer
		wantCode uint
		wantMsg  string
		wantErr  error
	}{
		{"permission denied", gatewayError(403, 7, "etcdserver: permission denied"), cnierr.CodeInvalidConfig, "credentials", nil},
		{"not a gateway", answer{status: 404, body: "404 page not found"}, cnierr.CodeInvalidConfig, "v3 JSON gateway", nil},
		{"any other refusal", gatewayError(400, 3, "etcdserver: key is not provided"), cnierr.CodeIO, "key is not provided", nil},
		{"no quorum", timedOut, cnierr.CodeTryAgainLater, "no quorum", ErrNoQuorum},
		{"garbage", answer{status: 200, body: "{"}, cnierr.CodeDecoding, "decode", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client(t, 500*time.Millisecond, newMember(t, tc.answer))
			_, err := c.Read(Get("k"))
			e := cnierr.As(err)
			if e == nil || e.Code != tc.wantCode || !strings.Contains(e.Msg+e.Details, tc.wantMsg) {
				t.Fatalf("err = %v, want code %d saying %q", err, tc.wantCode, tc.wantMsg)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		c := New(Config{Endpoints: []string{downURL}, Timeout: 300 * time.Millisecond})
		_, err := c.Read(Get("k"))
		if !errors.Is(err, ErrUnreachable) || cnierr.Code(err) != cnierr.CodeTryAgainLater || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("err = %v, want 11 unreachable", err)
		}
	})
}
