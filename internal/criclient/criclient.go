// Package criclient asks a CRI runtime (containerd, CRI-O) which pod
// sandboxes are alive, for `gc --cri`. It speaks gRPC, so only the full
// flavour links it.
package criclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Target turns what an operator types (a socket path, or a unix:// URL as
// crictl takes) into a gRPC target.
func Target(endpoint string) (string, error) {
	switch {
	case endpoint == "":
		return "", fmt.Errorf("no CRI endpoint given")
	case strings.HasPrefix(endpoint, "unix://"):
		return endpoint, nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix://" + endpoint, nil
	}
	return "", fmt.Errorf("CRI endpoint %q: want a unix socket path or unix:// URL", endpoint)
}

// LiveSandboxes returns the IDs of the runtime's pod sandboxes in state
// READY. Any failure to get that list (no socket, no CRI behind it, a
// timeout) is an error: an empty list is only ever the runtime's answer.
func LiveSandboxes(endpoint string, timeout time.Duration) (map[string]bool, error) {
	target, err := Target(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %s: %w", endpoint, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}},
	}, grpc.WaitForReady(false))
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %s: ListPodSandbox: %w", endpoint, err)
	}
	live := make(map[string]bool, len(resp.Items))
	for _, s := range resp.Items {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			live[s.Id] = true
		}
	}
	return live, nil
}
