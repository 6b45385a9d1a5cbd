package metricsserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

const exposition = "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n"

func TestHandler(t *testing.T) {
	ok := func(w io.Writer) error { _, err := io.WriteString(w, exposition); return err }
	failing := func(w io.Writer) error {
		_, _ = io.WriteString(w, "# HELP half")
		return errors.New("disk gone")
	}
	tests := []struct {
		name, method, path string
		write              func(io.Writer) error
		status             int
		contentType, body  string
		allow, log         string
	}{
		{name: "GET", method: "GET", path: "/metrics", write: ok, status: 200, contentType: ContentType, body: exposition},
		{name: "HEAD: headers, no body", method: "HEAD", path: "/metrics", write: ok, status: 200, contentType: ContentType},
		{name: "query string ignored", method: "GET", path: "/metrics?x=1", write: ok, status: 200, contentType: ContentType, body: exposition},
		{name: "POST", method: "POST", path: "/metrics", write: ok, status: 405, allow: "GET, HEAD"},
		{name: "PUT", method: "PUT", path: "/metrics", write: ok, status: 405, allow: "GET, HEAD"},
		{name: "root", method: "GET", path: "/", write: ok, status: 404},
		{name: "below /metrics", method: "GET", path: "/metrics/x", write: ok, status: 404},
		{name: "trailing slash", method: "GET", path: "/metrics/", write: ok, status: 404},
		{name: "other path, other method", method: "POST", path: "/debug/pprof/", write: ok, status: 404},
		// Nothing of a failed exposition reaches the scraper.
		{name: "write fails", method: "GET", path: "/metrics", write: failing, status: 500, log: "metrics: disk gone\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			rec := httptest.NewRecorder()
			Handler(tt.write, &log).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.contentType != "" && res.Header.Get("Content-Type") != tt.contentType {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tt.contentType)
			}
			if tt.status == 200 && string(body) != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
			if tt.status == 500 && strings.Contains(string(body), "HELP") {
				t.Errorf("a failed exposition was served in part: %q", body)
			}
			if res.Header.Get("Allow") != tt.allow {
				t.Errorf("Allow %q, want %q", res.Header.Get("Allow"), tt.allow)
			}
			if log.String() != tt.log {
				t.Errorf("log %q, want %q", log.String(), tt.log)
			}
		})
	}
}

// Serve on port 0 says where it listens, computes the exposition per
// scrape, and stops when its context ends.
func TestServe(t *testing.T) {
	scrapes := 0
	var mu sync.Mutex
	write := func(w io.Writer) error {
		mu.Lock()
		defer mu.Unlock()
		scrapes++
		_, err := io.WriteString(w, exposition)
		return err
	}
	var log testkit.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, err := Serve(ctx, "127.0.0.1:0", write, &log)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(strings.NewReader(log.String())).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "metrics: serving on ")
	if !ok || strings.HasSuffix(addr, ":0") {
		t.Fatalf("log %q: want the bound address first", log.String())
	}
	for range 2 {
		res, err := http.Get("http://" + addr + Path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(body) != exposition {
			t.Fatalf("GET: %d %q", res.StatusCode, body)
		}
	}
	if mu.Lock(); scrapes != 2 {
		t.Errorf("%d expositions written for 2 scrapes: want one each, never cached", scrapes)
	}
	mu.Unlock()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop within 10s of its context ending")
	}
	if _, err := http.Get("http://" + addr + Path); err == nil {
		t.Error("still answering after its context ended")
	}
}

func TestServeRefusesAnAddressItCannotListenOn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log testkit.SyncBuffer
	done, err := Serve(ctx, "127.0.0.1:0", func(io.Writer) error { return nil }, &log)
	if err != nil {
		t.Fatal(err)
	}
	taken := strings.TrimSpace(strings.TrimPrefix(log.String(), "metrics: serving on "))
	for _, addr := range []string{taken, "127.0.0.1", "127.0.0.1:99999"} {
		if _, err := Serve(ctx, addr, func(io.Writer) error { return nil }, io.Discard); err == nil {
			t.Errorf("Serve %s: no error", addr)
		}
	}
	cancel()
	<-done
}
