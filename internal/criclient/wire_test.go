package criclient

import (
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The hand decoder against the CRI's own generated encoder (test-only):
// every field of a PodSandbox present, unknown ones skipped, READY (0)
// omitted on the wire as proto3 does.
func TestDecodeListPodSandbox(t *testing.T) {
	resp := &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{
		{Id: "ready-1", Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Namespace: "ns", Uid: "u", Attempt: 3},
			State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: 1732500000000000000,
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"cniplugins.io/pools": "x"}, RuntimeHandler: "runc"},
		{Id: "stopped-1", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: 1},
		{Id: "ready-2"},
	}}
	b, err := resp.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeListPodSandbox(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox{{"ready-1", true}, {"stopped-1", false}, {"ready-2", true}}
	if !slices.Equal(got, want) {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
	empty, err := decodeListPodSandbox(nil)
	if err != nil || len(empty) != 0 {
		t.Errorf("empty answer: %v, %v", empty, err)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"truncated key":      {0x80},
		"truncated length":   {0x0a, 0x05, 0x0a},
		"item without an ID": {0x0a, 0x02, 0x18, 0x01},
		"wire type 3":        {0x0b},
	} {
		if _, err := decodeListPodSandbox(b); err == nil {
			t.Errorf("%s: % x decoded without error", name, b)
		}
	}
}

func TestFrame(t *testing.T) {
	msg := []byte("hello")
	f := frame(msg)
	if len(f) != 10 || f[0] != 0 || f[4] != 5 {
		t.Fatalf("frame = % x", f)
	}
	got, err := unframe(f)
	if err != nil || string(got) != "hello" {
		t.Errorf("unframe = %q, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"short":      {0, 0, 0},
		"compressed": {1, 0, 0, 0, 0},
		"length":     {0, 0, 0, 0, 9, 'x'},
	} {
		if _, err := unframe(b); err == nil {
			t.Errorf("%s: unframe(% x) succeeded", name, b)
		}
	}
}

func TestSocketPath(t *testing.T) {
	for in, want := range map[string]string{
		"/run/containerd/containerd.sock": "/run/containerd/containerd.sock",
		"unix:///run/crio/crio.sock":      "/run/crio/crio.sock",
		"":                                "",
		"tcp://127.0.0.1:1234":            "",
		"run/containerd/containerd.sock":  "",
	} {
		got, err := SocketPath(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
