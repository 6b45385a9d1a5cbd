package kubenode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func (n *Node) start(name string, args ...string) error {
	p, err := startProc(n.Root, name, filepath.Join(KubernetesDir, name), nil, args...)
	if err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	return nil
}

// startControlPlane starts the API server, waits for it, then the
// controller manager (service accounts, the root CA's ConfigMap,
// Deployments, StatefulSets, DaemonSets) and the scheduler. Every
// listener is on 127.0.0.1.
func (n *Node) startControlPlane(ctx context.Context) error {
	p := n.pki
	err := n.start("kube-apiserver",
		"--etcd-servers="+n.etcd.Endpoints()[0],
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(n.ports.apiserver),
		"--cert-dir="+filepath.Join(n.Root, "apiserver-certs"),
		"--tls-cert-file="+p.apiserver.CertPath, "--tls-private-key-file="+p.apiserver.KeyPath,
		"--client-ca-file="+p.ca.CertPath,
		"--service-account-key-file="+p.saKey, "--service-account-signing-key-file="+p.saKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range="+serviceRange,
		"--authorization-mode=Node,RBAC",
		// The API server reaches the kubelet (logs, exec) by the node's
		// name, which resolves to loopback.
		"--kubelet-preferred-address-types=Hostname",
		"--kubelet-client-certificate="+p.admin.CertPath, "--kubelet-client-key="+p.admin.KeyPath,
		"--kubelet-certificate-authority="+p.ca.CertPath,
		"--allow-privileged=true",
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	if err := poll(ctx, 90*time.Second, "kube-apiserver", func() error {
		_, err := n.Kubectl(ctx, "get", "--raw", "/readyz")
		return err
	}); err != nil {
		return err
	}
	if err := n.start("kube-controller-manager",
		"--kubeconfig="+n.Kubeconfig, "--authentication-kubeconfig="+n.Kubeconfig, "--authorization-kubeconfig="+n.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(n.ports.controllerManager),
		"--leader-elect=false",
		"--service-account-private-key-file="+p.saKey, "--root-ca-file="+p.ca.CertPath,
		"--use-service-account-credentials=false",
		"--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route",
		"--service-cluster-ip-range="+serviceRange,
		// A DaemonSet's rollout and a pod's deletion are what the tests
		// watch: no reason to wait for the defaults' minute.
		"--concurrent-deployment-syncs=2", "--concurrent-statefulset-syncs=2",
	); err != nil {
		return err
	}
	return n.start("kube-scheduler",
		"--kubeconfig="+n.Kubeconfig, "--authentication-kubeconfig="+n.Kubeconfig, "--authorization-kubeconfig="+n.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(n.ports.scheduler),
		"--leader-elect=false",
	)
}

// kubeletConfig is the KubeletConfiguration: cgroupfs, as containerd's
// runc is configured; swap tolerated; image GC and eviction thresholds
// that never delete the local images (nothing could pull them again) nor
// evict a pod for a machine's full disk; the ConfigMaps' updates seen
// within seconds; the pods' logs and every state under the node's root.
func (n *Node) kubeletConfig() map[string]any {
	return map[string]any{
		"apiVersion":   "kubelet.config.k8s.io/v1beta1",
		"kind":         "KubeletConfiguration",
		"address":      "127.0.0.1",
		"port":         n.ports.kubelet,
		"readOnlyPort": 0, "healthzPort": 0,
		"tlsCertFile": n.pki.kubeletServing.CertPath, "tlsPrivateKeyFile": n.pki.kubeletServing.KeyPath,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": false},
			"x509":      map[string]any{"clientCAFile": n.pki.ca.CertPath},
		},
		"authorization":               map[string]any{"mode": "AlwaysAllow"},
		"containerRuntimeEndpoint":    "unix://" + n.ContainerdSock,
		"cgroupDriver":                "cgroupfs",
		"cgroupsPerQOS":               false,
		"enforceNodeAllocatable":      []string{},
		"failSwapOn":                  false,
		"failCgroupV1":                false,
		"imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
		"evictionHard": map[string]string{
			"memory.available": "1Mi", "nodefs.available": "0%", "imagefs.available": "0%", "nodefs.inodesFree": "0%",
		},
		"syncFrequency":                             "5s",
		"fileCheckFrequency":                        "5s",
		"nodeStatusUpdateFrequency":                 "2s",
		"configMapAndSecretChangeDetectionStrategy": "Watch",
		"podLogsDir":                                filepath.Join(n.Root, "pod-logs"),
		"serializeImagePulls":                       false,
		"maxPods":                                   250,
		"resolvConf":                                "/etc/resolv.conf",
		"runtimeRequestTimeout":                     "2m",
		"protectKernelDefaults":                     false,
		"localStorageCapacityIsolation":             false,
	}
}

func (n *Node) startKubelet(ctx context.Context) error {
	conf, err := json.MarshalIndent(n.kubeletConfig(), "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(n.Root, "kubelet.json")
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		return err
	}
	if err := n.start("kubelet",
		"--config="+path,
		"--kubeconfig="+n.kubeletKubeconfig(),
		"--root-dir="+filepath.Join(n.Root, "kubelet"),
		"--cert-dir="+filepath.Join(n.Root, "kubelet-pki"),
		"--hostname-override="+n.Name,
		"--v=2",
	); err != nil {
		return err
	}
	return poll(ctx, 90*time.Second, "the kubelet's node registration", func() error {
		kubelet := n.procs[len(n.procs)-1]
		if !kubelet.running() {
			return fmt.Errorf("kubelet exited: %s", kubelet.tail(3000))
		}
		_, err := n.Kubectl(ctx, "get", "node", n.Name)
		return err
	})
}
