// Package criclient asks a CRI runtime (containerd, CRI-O) which pod
// sandboxes are alive, for `gc --cri`.
//
// It speaks just enough gRPC for one call, ListPodSandbox: HTTP/2 without
// TLS over the runtime's unix socket (net/http's own, already in the full
// flavour), one length-prefixed protobuf message each way, decoded by hand.
// The gRPC and CRI Go packages would triple the full flavour's package
// initialisation, which every exec of ipam-da-etcd pays, for one call an
// hour; the test suite drives containerd with them and checks this client
// against the real daemon.
package criclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// maxResponse bounds the answer: a ListPodSandbox of thousands of pods is
// a few MiB.
const maxResponse = 64 << 20

// SocketPath turns what an operator types (a socket path, or a unix:// URL
// as crictl takes) into the socket's path.
func SocketPath(endpoint string) (string, error) {
	switch {
	case endpoint == "":
		return "", fmt.Errorf("no CRI endpoint given")
	case strings.HasPrefix(endpoint, "unix://"):
		return strings.TrimPrefix(endpoint, "unix://"), nil
	case strings.HasPrefix(endpoint, "/"):
		return endpoint, nil
	}
	return "", fmt.Errorf("CRI endpoint %q: want a unix socket path or unix:// URL", endpoint)
}

// LiveSandboxes returns the IDs of the runtime's pod sandboxes in state
// READY. Any failure to get that list (no socket, no CRI behind it, a
// timeout, an answer it cannot read) is an error: an empty list is only
// ever the runtime's answer.
func LiveSandboxes(endpoint string, timeout time.Duration) (map[string]bool, error) {
	sock, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	msg, err := call(ctx, sock, "/runtime.v1.RuntimeService/ListPodSandbox", nil)
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %s: ListPodSandbox: %w", endpoint, err)
	}
	sandboxes, err := decodeListPodSandbox(msg)
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %s: ListPodSandbox answer: %w", endpoint, err)
	}
	live := make(map[string]bool, len(sandboxes))
	for _, s := range sandboxes {
		if s.ready {
			live[s.id] = true
		}
	}
	return live, nil
}

// call makes one unary gRPC call over the unix socket and returns the
// answer's message.
func call(ctx context.Context, sock, method string, request []byte) ([]byte, error) {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	transport := &http.Transport{
		Protocols: &protocols,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}
	defer transport.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+method, bytes.NewReader(frame(request)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %s (not a gRPC server?)", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxResponse {
		return nil, fmt.Errorf("answer larger than %d MiB", maxResponse>>20)
	}
	// A failed call may carry its status in the headers alone.
	status, message := resp.Trailer.Get("grpc-status"), resp.Trailer.Get("grpc-message")
	if status == "" {
		status, message = resp.Header.Get("grpc-status"), resp.Header.Get("grpc-message")
	}
	if status != "0" {
		return nil, fmt.Errorf("gRPC status %q: %s", status, message)
	}
	return unframe(body)
}
