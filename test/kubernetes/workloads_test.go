package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// podTemplate is every test pod: busybox sleeping, no API token, the
// host's DNS (the cluster runs none), quick to stop. Not a grace period of
// 0: that deletes the pod's object at once, before the kubelet has torn
// its sandbox (and so its address) down, and the tests compare the two.
const podTemplate = `    metadata:
      labels: {app: %[1]s}
    spec:
      automountServiceAccountToken: false
      enableServiceLinks: false
      terminationGracePeriodSeconds: 1
      dnsPolicy: Default
      containers:
        - name: sleep
          image: ` + busyboxImage + `
          imagePullPolicy: Never`

// namespace makes ns.
func (c *cluster) namespace(t *testing.T, ns string) {
	t.Helper()
	c.apply(t, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns))
}

// deployment applies a Deployment of replicas pods named name in ns.
func (c *cluster) deployment(t *testing.T, ns, name string, replicas int) {
	t.Helper()
	c.apply(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  replicas: %[3]d
  selector: {matchLabels: {app: %[1]s}}
  template:
`+podTemplate+"\n", name, ns, replicas))
}

// statefulSet applies a StatefulSet (and its headless Service) of
// replicas pods in ns.
func (c *cluster) statefulSet(t *testing.T, ns, name string, replicas int) {
	t.Helper()
	c.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  clusterIP: None
  selector: {app: %[1]s}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  serviceName: %[1]s
  replicas: %[3]d
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: %[1]s}}
  template:
`+podTemplate+"\n", name, ns, replicas))
}

// pods lists the pods of ns ("" for every namespace but kube-system's).
func (c *cluster) pods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	pods, err := c.listPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// listPods is pods without failing a test: for the waits, which retry
// what kubectl could not answer, and for other goroutines than the
// test's.
func (c *cluster) listPods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	var l corev1.PodList
	args := []string{"pods", "-n", ns}
	if ns == "" {
		args = []string{"pods", "-A"}
	}
	if err := c.Get(ctx, &l, args...); err != nil {
		return nil, err
	}
	var pods []corev1.Pod
	for _, p := range l.Items {
		if p.Namespace != "kube-system" {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// ready reports whether p runs with every container ready.
func ready(p corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// allReady is nil once ns has exactly n pods, all ready.
func (c *cluster) allReady(t *testing.T, ns string, n int) func() error {
	return func() error {
		pods, err := c.listPods(t.Context(), ns)
		if err != nil {
			return err
		}
		r := 0
		var waiting []string
		for _, p := range pods {
			if ready(p) {
				r++
			} else {
				waiting = append(waiting, p.Name+" "+string(p.Status.Phase))
			}
		}
		if len(pods) != n || r != n {
			return fmt.Errorf("%s: %d pods, %d ready, want %d; not ready: %s", ns, len(pods), r, n, strings.Join(waiting, ", "))
		}
		return nil
	}
}

// nodeReady is the node's Ready condition: its status and message.
func (c *cluster) nodeReady(t *testing.T) (corev1.ConditionStatus, string) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(t.Context(), &n, "node", c.Name); err != nil {
		t.Fatal(err)
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status, cond.Message
		}
	}
	return corev1.ConditionUnknown, "no Ready condition"
}

// events are ns's events of reason.
func (c *cluster) events(t *testing.T, ns, reason string) []corev1.Event {
	t.Helper()
	var l corev1.EventList
	if err := c.Get(t.Context(), &l, "events", "-n", ns); err != nil {
		t.Fatal(err)
	}
	var es []corev1.Event
	for _, e := range l.Items {
		if e.Reason == reason {
			es = append(es, e)
		}
	}
	return es
}
