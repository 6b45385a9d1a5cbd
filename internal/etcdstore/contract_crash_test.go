package etcdstore_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	. "github.com/cniplugins/cniplugins/internal/etcdstore"
)

// crashProxy stands between a contract command and etcd: armed, it
// passes the command's first n requests and refuses every later one, as
// etcd sees a plugin killed after its n-th round trip (a request etcd
// received is applied whole or not at all, so a request is the step).
type crashProxy struct {
	srv    *httptest.Server
	target string

	mu    sync.Mutex
	armed bool
	left  int
}

func newCrashProxy(t *testing.T, endpoint string) *crashProxy {
	p := &crashProxy{target: endpoint}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *crashProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	crashed := p.left == 0
	if !crashed {
		p.left--
	}
	p.mu.Unlock()
	if crashed {
		// A definite refusal (InvalidArgument): the client neither
		// waits nor sends it elsewhere, and the command ends.
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"the contract stopped this command (a crash)","code":3}`))
		return
	}
	body, _ := io.ReadAll(r.Body)
	resp, err := http.Post(p.target+r.URL.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// endpoints are those of the next command: through the proxy, once,
// when a crash is armed (never for a subject made without one).
func (e etcdSubject) eps() []string {
	p := e.crash
	if p == nil {
		return e.endpoints
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed {
		return e.endpoints
	}
	p.armed = false
	return []string{p.srv.URL}
}

// CrashAfter implements alloctest.Crashable.
func (e etcdSubject) CrashAfter(n int) {
	e.crash.mu.Lock()
	e.crash.armed, e.crash.left = true, n
	e.crash.mu.Unlock()
}

// Holds implements alloctest.Crashable: the hold keys' values.
func (e etcdSubject) Holds() ([]alloc.Hold, error) {
	cl := etcdkv.New(etcdkv.Config{Endpoints: e.endpoints, Timeout: 10 * time.Second})
	kvs, err := cl.List(e.prefix+"sticky/", false)
	var out []alloc.Hold
	for _, kv := range kvs {
		if h, ok := DecodeHold(kv.Value); ok {
			out = append(out, h)
		}
	}
	return out, err
}
