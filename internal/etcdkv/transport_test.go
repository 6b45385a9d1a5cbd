package etcdkv

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestTransportReusesConnection: a command's requests to one member go
// over one connection; one the member closed after answering (a restart
// between two requests) is not used again, so a write that must not be
// sent twice is sent, answered and not reported as of unknown outcome.
func TestTransportReusesConnection(t *testing.T) {
	for _, closeAfter := range []bool{false, true} {
		var mu sync.Mutex
		conns := 0
		closed := make(chan struct{}, 3)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if closeAfter {
				// Answer, then close without saying so, as a member
				// that goes away between two requests does.
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(okTxn)) + "\r\n\r\n" + okTxn)
				_ = buf.Flush()
				time.Sleep(20 * time.Millisecond)
				conn.Close()
				closed <- struct{}{}
				return
			}
			_, _ = w.Write([]byte(okTxn))
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				mu.Lock()
				conns++
				mu.Unlock()
			}
		}
		srv.Start()
		c := New(Config{Endpoints: []string{srv.URL}, Timeout: 2 * time.Second})
		for i := 0; i < 3; i++ {
			if _, err := c.TxnOnce(Txn{Then: []Op{Put("k", []byte("v"))}}); err != nil {
				t.Fatalf("closeAfter=%v, request %d: %v", closeAfter, i, err)
			}
			if closeAfter {
				// The next request starts once the member has closed: on a
				// loaded machine a fixed pause could end before the close.
				select {
				case <-closed:
				case <-time.After(10 * time.Second):
					t.Fatalf("request %d: the member never closed its connection", i)
				}
			}
		}
		srv.Close()
		want := 1
		if closeAfter {
			want = 3
		}
		if conns != want {
			t.Errorf("closeAfter=%v: %d connections, want %d", closeAfter, conns, want)
		}
	}
}
