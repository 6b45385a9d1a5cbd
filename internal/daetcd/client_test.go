package daetcd

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// member is a fake etcd gateway: it answers each request with the next
// of its answers (the last one repeats) and counts what it was sent.
type member struct {
	srv  *httptest.Server
	sent atomic.Int32
}

// answer is one reply of a fake member: an HTTP status and body, or
// hangup (the connection is closed after the request was read).
type answer struct {
	status int
	body   string
	hangup bool
}

func newMember(t *testing.T, answers ...answer) *member {
	m := &member{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(m.sent.Add(1))
		a := answers[min(n, len(answers))-1]
		if a.hangup {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(m.srv.Close)
	return m
}

const okTxn = `{"header":{"revision":"7"},"succeeded":true}`

// TestWritesAreNeverSentTwice: which failures move a request on to the
// next member, by kind of request, and that a write which may have
// reached a member is never sent again.
func TestWritesAreNeverSentTwice(t *testing.T) {
	hangup := answer{hangup: true}
	timedOut := answer{status: 503, body: `{"error":"etcdserver: request timed out","code":14}`}
	noLeader := answer{status: 503, body: `{"error":"etcdserver: no leader","code":14}`}
	dropped := answer{status: 500, body: `{"error":"raft proposal dropped","code":2}`}
	learner := answer{status: 400, body: `{"error":"etcdserver: rpc not supported for learner","code":9}`}
	busy := answer{status: 429, body: `{"error":"etcdserver: too many requests","code":8}`}
	nospace := answer{status: 500, body: `{"error":"etcdserver: mvcc: database space exceeded","code":8}`}
	ok := answer{status: 200, body: okTxn}
	write := txnRequest{Success: []requestOp{del("k")}}
	read := txnRequest{Success: []requestOp{get("k")}}
	for _, tc := range []struct {
		name      string
		txn       txnRequest
		first     answer
		wantCode  uint // 0: success
		wantMsg   string
		wantSent2 int32 // requests the second member got
	}{
		{"write, connection lost after sending", write, hangup, cnierr.CodeTryAgainLater, "may have applied", 0},
		{"read, connection lost", read, hangup, 0, "", 1},
		{"write, request timed out", write, timedOut, cnierr.CodeTryAgainLater, "may have applied", 0},
		{"read, request timed out", read, timedOut, 0, "", 1},
		{"write, no leader", write, noLeader, 0, "", 1},
		{"write, raft proposal dropped", write, dropped, 0, "", 1},
		{"write, learner", write, learner, 0, "", 1},
		{"write, too many requests", write, busy, 0, "", 1},
		{"write, database space exceeded", write, nospace, cnierr.CodeIO, "database space exceeded", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newMember(t, tc.first), newMember(t, ok)
			cl, err := newClient(&etcdConfig{endpoints: []string{a.srv.URL, b.srv.URL}, timeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			cl.next = 0
			start := time.Now()
			_, err = cl.txn(tc.txn)
			var e *types.Error
			switch {
			case tc.wantCode == 0 && err != nil:
				t.Fatalf("err = %v, want success", err)
			case tc.wantCode != 0 && (!errors.As(err, &e) || e.Code != tc.wantCode || !strings.Contains(e.Msg+e.Details, tc.wantMsg)):
				t.Fatalf("err = %v, want code %d saying %q", err, tc.wantCode, tc.wantMsg)
			}
			if got := a.sent.Load(); got != 1 {
				t.Errorf("first member got %d requests, want 1", got)
			}
			if got := b.sent.Load(); got != tc.wantSent2 {
				t.Errorf("second member got %d requests, want %d", got, tc.wantSent2)
			}
			if tc.wantCode != 0 && time.Since(start) > 2*time.Second {
				t.Errorf("failing took %s: a definite answer must fail fast", time.Since(start))
			}
		})
	}
}

func TestTxnWrites(t *testing.T) {
	for _, tc := range []struct {
		txn  txnRequest
		want bool
	}{
		{txnRequest{Success: []requestOp{get("k")}}, false},
		{txnRequest{Success: []requestOp{put("k", []byte("v"))}}, true},
		{txnRequest{Failure: []requestOp{del("k")}}, true},
		{txnRequest{Success: []requestOp{{Txn: &txnRequest{Success: []requestOp{get("k")}}}}}, false},
		{txnRequest{Success: []requestOp{{Txn: &txnRequest{Failure: []requestOp{del("k")}}}}}, true},
	} {
		if got := tc.txn.writes(); got != tc.want {
			t.Errorf("%+v.writes() = %v, want %v", tc.txn, got, tc.want)
		}
	}
}
