package etcd

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultProxy stands in front of one etcd member's client URL and does to
// chosen requests what a bad network or a struggling member does: hold
// them (and maybe deliver them late), delay them, deliver them and lose
// the answer, reset the connection, or answer an error of its own. Every
// other request passes through. It sees requests as the gateway does:
// path and JSON body, with the keys decoded for matching.
type faultProxy struct {
	t      *testing.T
	srv    *httptest.Server
	target string
	http   *http.Client
	done   chan struct{} // closed at cleanup: held requests are dropped

	mu      sync.Mutex
	rules   []*rule
	log     []request
	chaos   func(request) *rule // a one-off fault for a request no rule matched (nil: none)
	pending sync.WaitGroup      // late deliveries not made yet
}

// request is one request the proxy saw.
type request struct {
	Path string
	Body string
	Keys []string // every key the body names, decoded
	Puts []string // the keys it puts
}

func (r request) puts() bool    { return strings.Contains(r.Body, `"request_put"`) }
func (r request) deletes() bool { return strings.Contains(r.Body, `"request_delete_range"`) }
func (r request) txn() bool     { return r.Path == "/v3/kv/txn" }

// takesOver reports a claim that compares a revision besides its fence
// bucket's: one that takes a marker or a hold over. Every claim compares
// its bucket's mod revision once in each branch of the node's
// registration (etcdstore's registering), so twice in all.
func (r request) takesOver() bool { return strings.Count(r.Body, `"target":"MOD"`) > 2 }

// putsUnder reports whether the request puts a key containing s.
func (r request) putsUnder(s string) bool {
	for _, k := range r.Puts {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

type faultKind int

const (
	pass       faultKind = iota // deliver and answer; a rule's applied closes once the first answer came
	hold                        // never answer; deliver when release is closed, if it is
	delay                       // deliver after d, then answer
	loseAnswer                  // deliver, then cut the connection instead of answering
	reset                       // cut the connection without delivering
	answerOwn                   // answer status/body without delivering
	capAnswer                   // deliver; an answer over 4 MiB becomes the error of etcd 3.4's gateway before 3.4.17
	late                        // cut the connection now, deliver after d (a late copy)
	slowAnswer                  // deliver, answer after d
)

// rule applies its fault to the next n requests that match (n = 0: all).
type rule struct {
	match   func(request) bool
	kind    faultKind
	n       int
	d       time.Duration
	status  int
	body    string
	arrived chan struct{} // closed when the first request matched (hold, pass)
	release chan struct{} // close to deliver the held requests late
	applied chan struct{} // closed once a held request was delivered (pass: once the member answered it)

	hits int
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	p := &faultProxy{t: t, target: target, http: &http.Client{Timeout: 30 * time.Second}, done: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		close(p.done)
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// proxies puts one faultProxy in front of every member, in order.
func proxies(t *testing.T) []*faultProxy {
	var ps []*faultProxy
	for _, ep := range cluster.Endpoints() {
		ps = append(ps, newFaultProxy(t, ep))
	}
	return ps
}

func urls(ps ...*faultProxy) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.srv.URL)
	}
	return out
}

// on adds a rule; hold rules get their channels.
func (p *faultProxy) on(match func(request) bool, kind faultKind, n int) *rule {
	r := &rule{match: match, kind: kind, n: n, arrived: make(chan struct{}), release: make(chan struct{}), applied: make(chan struct{})}
	p.mu.Lock()
	p.rules = append(p.rules, r)
	p.mu.Unlock()
	return r
}

// answering makes r answer status and body itself.
func (r *rule) answering(status int, body string) *rule { r.status, r.body = status, body; return r }

// after sets r's delay.
func (r *rule) after(d time.Duration) *rule { r.d = d; return r }

// setChaos makes f choose a one-off fault for each request no rule
// matches (nil: none), and returns once late deliveries are made when f
// is nil.
func (p *faultProxy) setChaos(f func(request) *rule) {
	p.mu.Lock()
	p.chaos = f
	p.mu.Unlock()
	if f == nil {
		p.pending.Wait()
	}
}

// requests returns what the proxy saw that matches.
func (p *faultProxy) requests(match func(request) bool) []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []request
	for _, r := range p.log {
		if match == nil || match(r) {
			out = append(out, r)
		}
	}
	return out
}

func (p *faultProxy) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(hr.Body)
	req := request{Path: hr.URL.Path, Body: string(body), Keys: keysIn(body, ""), Puts: keysIn(body, "request_put")}
	p.mu.Lock()
	p.log = append(p.log, req)
	var r *rule
	first := false
	for _, x := range p.rules {
		if (x.n == 0 || x.hits < x.n) && x.match(req) {
			x.hits++
			r, first = x, x.hits == 1
			break
		}
	}
	if r == nil && p.chaos != nil {
		r = p.chaos(req)
	}
	if r != nil && r.kind == late {
		p.pending.Add(1) // under the lock: setChaos(nil) waits for every one
	}
	p.mu.Unlock()
	kind := pass
	if r != nil {
		kind = r.kind
	}
	switch kind {
	case hold:
		if first {
			close(r.arrived)
		}
		select {
		case <-r.release:
			_, _, _ = p.deliver(hr, body)
			if first {
				close(r.applied)
			}
		case <-p.done:
		}
		cut(w)
		return
	case delay:
		select {
		case <-time.After(r.d):
		case <-p.done:
			return
		}
	case loseAnswer:
		_, _, _ = p.deliver(hr, body)
		cut(w)
		return
	case reset:
		cut(w)
		return
	case answerOwn:
		w.WriteHeader(r.status)
		_, _ = w.Write([]byte(r.body))
		return
	case late:
		cut(w)
		copied := &http.Request{URL: hr.URL, Header: hr.Header.Clone()}
		go func() {
			defer p.pending.Done()
			select {
			case <-time.After(r.d):
				_, _, _ = p.deliver(copied, body)
			case <-p.done:
			}
		}()
		return
	}
	if kind == pass && first {
		close(r.arrived)
	}
	status, data, err := p.deliver(hr, body)
	if kind == pass && first {
		close(r.applied)
	}
	if err != nil {
		cut(w)
		return
	}
	if kind == slowAnswer {
		select {
		case <-time.After(r.d):
		case <-p.done:
		}
	}
	if kind == capAnswer && len(data) > 4<<20 {
		status, data = 500, []byte(gatewayError(8, fmt.Sprintf("grpc: received message larger than max (%d vs. 4194304)", len(data))))
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// deliver sends the request to the member, on a context of its own: a
// request delivered late outlives the client that sent it.
func (p *faultProxy) deliver(hr *http.Request, body []byte) (int, []byte, error) {
	out, err := http.NewRequest(http.MethodPost, p.target+hr.URL.Path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	out.Header.Set("Content-Type", "application/json")
	if a := hr.Header.Get("Authorization"); a != "" {
		out.Header.Set("Authorization", a)
	}
	resp, err := p.http.Do(out)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// cut closes the client's connection without an answer.
func cut(w http.ResponseWriter) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

// keysIn decodes every "key" field of a gateway request body, or only
// those inside an object named under ("request_put": the keys it puts).
func keysIn(body []byte, under string) []string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, in bool)
	walk = func(v any, in bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "key" && in {
					if b, err := base64.StdEncoding.DecodeString(s); err == nil {
						out = append(out, string(b))
					}
					continue
				}
				walk(e, in || k == under)
			}
		case []any:
			for _, e := range x {
				walk(e, in)
			}
		}
	}
	walk(v, under == "")
	return out
}

// gatewayError is a refusal as etcd's gateway words it.
func gatewayError(code int, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": msg, "code": code, "message": msg})
	return string(b)
}

// waitFor fails the test if ch is not closed within d.
func waitFor(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
	}
}
