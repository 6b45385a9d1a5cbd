package kubenode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Kubectl runs kubectl as the cluster's administrator and returns its
// standard output; an error carries its standard error.
func (n *Node) Kubectl(ctx context.Context, args ...string) (string, error) {
	return n.KubectlIn(ctx, nil, args...)
}

// KubectlIn is Kubectl with stdin (for apply -f -).
func (n *Node) KubectlIn(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(KubernetesDir, "kubectl"), append([]string{"--kubeconfig", n.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Get runs kubectl get ... -o json into v.
func (n *Node) Get(ctx context.Context, v any, args ...string) error {
	out, err := n.Kubectl(ctx, append(append([]string{"get"}, args...), "-o", "json")...)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(out), v)
}

// Wait polls f every half second until it returns nil, or fails with its
// last error once timeout has passed.
func Wait(ctx context.Context, timeout time.Duration, what string, f func() error) error {
	return poll(ctx, timeout, what, f)
}
