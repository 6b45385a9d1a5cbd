// Package metricsserver serves a Prometheus text exposition over HTTP:
// `k8s-install --metrics-address` in the full flavour. It is the only HTTP
// server of the installer and links net/http, so only cmd/cniplugins-full
// names it (as cli.Flavour.Metrics); what it serves is written elsewhere
// (k8sinstall.Exposition), in packages the lean binary shares.
package metricsserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"
)

// ContentType is the text exposition format's, version 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Path is the one path served.
const Path = "/metrics"

// The server's bounds. The pod is on the host's network, where anything
// of the node or the cluster can connect: a client that sends its headers
// slowly, or never reads the answer, must not hold a connection (and its
// goroutine) for long. A scrape reads state directories, which takes
// milliseconds; Prometheus' own scrape timeout is 10 s by default.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 16 << 10
	// shutdownGrace lets a scrape in flight at SIGTERM finish, well
	// within the pod's terminationGracePeriodSeconds.
	shutdownGrace = 3 * time.Second
)

// Handler answers GET and HEAD of Path with what write writes, 404
// elsewhere and 405 for other methods. write runs once per request: the
// exposition is computed at scrape time, never cached.
func Handler(write func(io.Writer) error, logw io.Writer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Path {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// Whole before the first byte: a failure is then a 500, not a
		// 200 with a cut exposition that Prometheus would half ingest.
		var b bytes.Buffer
		if err := write(&b); err != nil {
			fmt.Fprintf(logw, "metrics: %v\n", err)
			http.Error(w, "cannot write the exposition", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(b.Bytes()) // the scraper gone: nothing to do
	})
}

// Serve listens on addr (HOST:PORT; port 0 picks one) and answers with
// Handler until ctx is done, then lets a scrape in flight finish and
// closes. It returns once listening, saying "metrics: serving on ADDR"
// (the bound address) on logw; an address it cannot listen on is its
// error, before anything is served. done is closed when the server has
// stopped.
func Serve(ctx context.Context, addr string, write func(io.Writer) error, logw io.Writer) (done <-chan struct{}, err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	srv := &http.Server{
		Handler:           Handler(write, logw),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// net/http's own complaints (a client's bad TLS hello, an
		// accept error) go to the container's log with the others.
		ErrorLog: log.New(logw, "metrics: ", 0),
	}
	fmt.Fprintf(logw, "metrics: serving on %s\n", l.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case err := <-served:
			// Serve returns only on a listener that failed: the
			// installer goes on without metrics, and says so.
			fmt.Fprintf(logw, "metrics: stopped serving: %v\n", err)
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				srv.Close()
			}
			<-served
		}
	}()
	return stopped, nil
}
