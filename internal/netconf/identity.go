package netconf

import (
	"fmt"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Who an attachment is, as the runtimes say it in CNI_ARGS: containerd's
// CRI plugin and CRI-O set K8S_POD_NAMESPACE and K8S_POD_NAME (podman
// K8S_POD_NAME alone), Nomad NOMAD_NAMESPACE.
const (
	ArgPodNamespace   = "K8S_POD_NAMESPACE"
	ArgNomadNamespace = "NOMAD_NAMESPACE"
	ArgPodName        = "K8S_POD_NAME"
)

// Where the namespace comes from: ipam.namespaceFrom. The runtime vouches
// for its own key only (containerd and CRI-O set K8S_POD_NAMESPACE, which
// a pod's author cannot touch; Nomad sets NOMAD_NAMESPACE after the job's
// own cni args, which may hold any other key), so the operator names the
// runtime, and the other key, when present, must agree with it.
const (
	NamespaceFromKubernetes = "kubernetes"
	NamespaceFromNomad      = "nomad"
	// NamespaceFromEither (ipam.namespaceFrom unset): whichever key is
	// there, and both, when both are, must agree. Safe where the runtime
	// always sends its own key; naming the runtime is safe everywhere.
	NamespaceFromEither = ""
)

// Identity is who the attachment is: the namespace a selector's rules
// match and every sticky key is scoped to, and its pod name.
type Identity struct {
	Namespace string
	PodName   string
}

// IsIdentityKey reports the CNI_ARGS keys that say who the attachment is.
func IsIdentityKey(k string) bool {
	return k == ArgPodNamespace || k == ArgNomadNamespace || k == ArgPodName
}

// ParseNamespaceFrom checks ipam.namespaceFrom, which selectors and
// allocators read alike.
func ParseNamespaceFrom(v string) error {
	switch v {
	case NamespaceFromEither, NamespaceFromKubernetes, NamespaceFromNomad:
		return nil
	}
	return cnierr.InvalidConfig("ipam.namespaceFrom", v, fmt.Sprintf("must be %q or %q", NamespaceFromKubernetes, NamespaceFromNomad))
}

// IdentityOf is who the attachment is, from CNI_ARGS, its namespace taken
// as from (ipam.namespaceFrom) says. Every reader of a namespace or pod
// name goes through it, so that no place trusts what another refuses: an
// identity key given twice with different values (a Nomad job's own args
// come before Nomad's), or the other runtime's namespace key differing
// from the one from names (absent included, when from names a runtime;
// both present and differing when from is unset), is code 7 naming both.
// Neither is ever preferred: one of them is an author posing.
func IdentityOf(cniArgs []CNIArg, from string) (Identity, error) {
	var k8s, nomad, name seen
	for _, kv := range cniArgs {
		var s *seen
		switch kv.Key {
		case ArgPodNamespace:
			s = &k8s
		case ArgNomadNamespace:
			s = &nomad
		case ArgPodName:
			s = &name
		default:
			continue
		}
		if s.set && s.value != kv.Value {
			return Identity{}, ConflictingIdentity("CNI_ARGS "+kv.Key, s.value, "CNI_ARGS "+kv.Key, kv.Value)
		}
		*s = seen{kv.Value, true}
	}
	if k8s.value != "" && nomad.value != "" && k8s.value != nomad.value {
		return Identity{}, ConflictingIdentity("CNI_ARGS "+ArgPodNamespace, k8s.value, "CNI_ARGS "+ArgNomadNamespace, nomad.value)
	}
	id := Identity{Namespace: k8s.value, PodName: name.value}
	switch {
	case from == NamespaceFromKubernetes && nomad.set && nomad.value != k8s.value:
		return Identity{}, ConflictingIdentity("CNI_ARGS "+ArgNomadNamespace, nomad.value, "CNI_ARGS "+ArgPodNamespace+" (ipam.namespaceFrom kubernetes)", k8s.value)
	case from == NamespaceFromNomad && k8s.set && k8s.value != nomad.value:
		return Identity{}, ConflictingIdentity("CNI_ARGS "+ArgPodNamespace, k8s.value, "CNI_ARGS "+ArgNomadNamespace+" (ipam.namespaceFrom nomad)", nomad.value)
	case from == NamespaceFromNomad || id.Namespace == "" && from == NamespaceFromEither:
		id.Namespace = nomad.value
	}
	return id, nil
}

// seen is one identity key's value in CNI_ARGS, and whether it was there.
type seen struct {
	value string
	set   bool
}

// ConflictingIdentity is the refusal of a second source of who the
// attachment is: src=value against the trusted source's value.
func ConflictingIdentity(src, value, trusted, trustedValue string) error {
	return cnierr.New(cnierr.CodeInvalidConfig, "conflicting namespace or pod name",
		"%s=%q conflicts with %s=%q: the namespace and pod name come only from the runtime that ipam.namespaceFrom names", src, value, trusted, trustedValue)
}
