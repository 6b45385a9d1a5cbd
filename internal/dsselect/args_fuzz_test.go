package dsselect

import "testing"

// FuzzArgs runs ipam-ds-args on a fuzzed config and CNI_ARGS: the rules,
// the runtime's inputs and the annotations all come from outside.
func FuzzArgs(f *testing.F) {
	f.Add(uint8(0), "IgnoreUnknown=1;K8S_POD_NAMESPACE=a;K8S_POD_NAME=db-1", []byte(`{"cniVersion":"1.1.0","name":"n",
		"ipam":{"rules":[{"namespace":"a","podName":"db-*","pools":[{"name":"a","subnet":"10.211.1.0/24"}],"podChoice":["a","f"]}],"defaultPools":["d"],
		"poolDefinitions":{"f":[{"subnet":"10.211.2.0/24"}]}},
		"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"cniplugins.io/pools":"f","cniplugins.io/ip":"10.211.2.9"}},
		"args":{"cni":{"labels":[{"key":"app","value":"x"}],"pools":["a"]}}}`))
	f.Add(uint8(1), "", []byte(`{"cniVersion":"1.1.0","name":"n","ipam":{"rules":[{"args":{"K":"[a"},"pools":["x"]}]}}`))
	f.Fuzz(func(t *testing.T, cmd uint8, cniArgs string, stdin []byte) {
		fuzzSelector(t, Args(), cmd, stdin, "CNI_ARGS="+cniArgs)
	})
}
