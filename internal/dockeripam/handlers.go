package dockeripam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/cniplugins/cniplugins/internal/logging"
)

// maxBody bounds a request body; dockerd's are a few hundred bytes.
const maxBody = 64 << 10

// contentType is what dockerd's plugin client expects back.
const contentType = "application/vnd.docker.plugins.v1+json"

// Handler serves the plugin API. dockerd's client sends POSTs with an
// empty Host header and no Content-Type, and empty bodies for the
// argument-less calls; nothing here depends on either header.
func (d *Driver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/Plugin.Activate", constant(struct{ Implements []string }{[]string{pluginKind}}))
	mux.HandleFunc("/IpamDriver.GetCapabilities", constant(struct{ RequiresMACAddress, RequiresRequestReplay bool }{}))
	mux.HandleFunc("/IpamDriver.GetDefaultAddressSpaces", constant(struct{ LocalDefaultAddressSpace, GlobalDefaultAddressSpace string }{LocalSpace, GlobalSpace}))
	mux.HandleFunc("/IpamDriver.RequestPool", call(d, d.RequestPool))
	mux.HandleFunc("/IpamDriver.ReleasePool", call(d, func(r ReleasePoolRequest) (struct{}, error) { return struct{}{}, d.ReleasePool(r) }))
	mux.HandleFunc("/IpamDriver.RequestAddress", call(d, d.RequestAddress))
	mux.HandleFunc("/IpamDriver.ReleaseAddress", call(d, func(r ReleaseAddressRequest) (struct{}, error) { return struct{}{}, d.ReleaseAddress(r) }))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, fmt.Sprintf("no such endpoint %s", r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			fail(w, http.StatusMethodNotAllowed, "the plugin API takes POST requests")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// constant answers an argument-less call, whatever its body.
func constant(reply any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { write(w, http.StatusOK, reply) }
}

// call decodes a request body into Req, runs f, and answers f's reply or
// f's error as {"Error": msg} with status 200, the form dockerd reports
// to the user. A body that cannot be read or decoded gets a 400 with
// {"Err": msg}.
func call[Req, Resp any](d *Driver, f func(Req) (Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decode(w, r, &req); err != nil {
			d.log.Warn("bad request", logging.String("path", r.URL.Path), logging.Error(err))
			status := http.StatusBadRequest
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				status = http.StatusRequestEntityTooLarge
			}
			fail(w, status, err.Error())
			return
		}
		resp, err := f(req)
		if err != nil {
			d.log.Warn("request refused", logging.String("path", r.URL.Path), logging.Error(err))
			write(w, http.StatusOK, errorResponse{Error: err.Error()})
			return
		}
		write(w, http.StatusOK, resp)
	}
}

func decode(w http.ResponseWriter, r *http.Request, into any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("empty request body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("malformed request: %w", err)
	}
	if dec.More() {
		return errors.New("malformed request: data after the JSON object")
	}
	return nil
}

func fail(w http.ResponseWriter, status int, msg string) {
	write(w, status, protocolError{Err: msg})
}

func write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
