package etcdkv

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// member is a fake etcd gateway: each request gets the next of its
// answers (the last one repeats), and it keeps what it was sent.
type member struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string // path + " " + body of each request
}

// answer is one reply of a fake member: an HTTP status and body, a
// hangup (the connection closed after the request was read), or a wait
// before answering.
type answer struct {
	status int
	body   string
	hangup bool
	wait   time.Duration
}

func newMember(t *testing.T, answers ...answer) *member {
	return newMemberFunc(t, func(n int, _ *http.Request, _ string) answer { return answers[min(n, len(answers))-1] })
}

// newMemberFunc answers the n-th request (from 1) as f says.
func newMemberFunc(t *testing.T, f func(n int, r *http.Request, body string) answer) *member {
	m := &member{}
	m.srv = httptest.NewServer(m.handler(f))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *member) handler(f func(n int, r *http.Request, body string) answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		m.mu.Lock()
		m.got = append(m.got, r.URL.Path+" "+b.String())
		n := len(m.got)
		m.mu.Unlock()
		a := f(n, r, b.String())
		if a.wait > 0 {
			select {
			case <-time.After(a.wait):
			case <-r.Context().Done():
				return
			}
		}
		if a.hangup {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	})
}

func (m *member) sent() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.got)
}

const okTxn = `{"header":{"revision":"7"},"succeeded":true}`

func ok() answer { return answer{status: 200, body: okTxn} }

// gatewayError is a refusal as etcd's gateway sends it.
func gatewayError(status, code int, msg string) answer {
	return answer{status: status, body: `{"error":"` + msg + `","code":` + strconv.Itoa(code) + `}`}
}

func client(t *testing.T, timeout time.Duration, eps ...*member) *Client {
	t.Helper()
	var urls []string
	for _, m := range eps {
		urls = append(urls, m.srv.URL)
	}
	return New(Config{Endpoints: urls, Timeout: timeout})
}
