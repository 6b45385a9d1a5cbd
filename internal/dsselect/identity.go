package dsselect

import (
	"fmt"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Where the namespace comes from: ipam.namespaceFrom. The runtime vouches
// for its own key only (containerd and CRI-O set K8S_POD_NAMESPACE, which
// a pod's author cannot touch; Nomad sets NOMAD_NAMESPACE after the job's
// own cni args, which may hold any other key), so the operator names the
// runtime, and the other key, when present, must agree with it.
const (
	namespaceFromKubernetes = "kubernetes"
	namespaceFromNomad      = "nomad"
	// namespaceFromEither (ipam.namespaceFrom unset): whichever key is
	// there, and both, when both are, must agree. Safe where the runtime
	// always sends its own key; naming the runtime is safe everywhere.
	namespaceFromEither = ""
)

// isIdentityKey: the CNI_ARGS keys that say who the attachment is (its
// namespace and pod name, so its rules and its sticky key).
func isIdentityKey(k string) bool {
	return k == argNamespace || k == argNomadNamespace || k == argPodName
}

// namespaceOf is the attachment's namespace from CNI_ARGS as from says;
// a value of the other runtime's key that differs from it (absent
// included, when from names a runtime) is code 7 naming both.
func namespaceOf(args map[string]string, from string) (string, error) {
	k8s, nomad := args[argNamespace], args[argNomadNamespace]
	switch from {
	case namespaceFromKubernetes:
		if _, set := args[argNomadNamespace]; set && nomad != k8s {
			return "", conflicting("CNI_ARGS "+argNomadNamespace, nomad, "CNI_ARGS "+argNamespace+" (ipam.namespaceFrom kubernetes)", k8s)
		}
		return k8s, nil
	case namespaceFromNomad:
		if _, set := args[argNamespace]; set && nomad != k8s {
			return "", conflicting("CNI_ARGS "+argNamespace, k8s, "CNI_ARGS "+argNomadNamespace+" (ipam.namespaceFrom nomad)", nomad)
		}
		return nomad, nil
	}
	if k8s != "" && nomad != "" && k8s != nomad {
		return "", conflicting("CNI_ARGS "+argNamespace, k8s, "CNI_ARGS "+argNomadNamespace, nomad)
	}
	if k8s != "" {
		return k8s, nil
	}
	return nomad, nil
}

// conflicting is the refusal of a second source of who the attachment is:
// never preferred, since one of the two is a pod's author posing.
func conflicting(src, value, trusted, trustedValue string) error {
	return cnierr.New(cnierr.CodeInvalidConfig, "conflicting namespace or pod name",
		"%s=%q conflicts with %s=%q: the namespace and pod name come only from the runtime that ipam.namespaceFrom names", src, value, trusted, trustedValue)
}

// parseNamespaceFrom checks ipam.namespaceFrom.
func parseNamespaceFrom(v string) error {
	switch v {
	case namespaceFromEither, namespaceFromKubernetes, namespaceFromNomad:
		return nil
	}
	return cnierr.InvalidConfig("ipam.namespaceFrom", v, fmt.Sprintf("must be %q or %q", namespaceFromKubernetes, namespaceFromNomad))
}
