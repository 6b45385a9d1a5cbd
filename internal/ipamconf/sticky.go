package ipamconf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// podAnnotationsCap is the capability through which a runtime passes a
// pod's annotations; maxStickyKey bounds a key, in bytes.
const (
	podAnnotationsCap = "io.kubernetes.cri.pod-annotations"
	maxStickyKey      = 253
)

// StickyConf is ipam.sticky and ipam.namespaceFrom, validated: what an
// allocator needs to find an attachment's key.
func StickyConf(conf *netconf.Envelope) (alloc.Sticky, error) {
	var ipam struct {
		Sticky        *alloc.StickyKeys `json:"sticky"`
		NamespaceFrom string            `json:"namespaceFrom"`
	}
	if err := conf.DecodeIPAM(&ipam); err != nil {
		return alloc.Sticky{}, err
	}
	s, err := alloc.ParseSticky(ipam.Sticky)
	if err != nil {
		return s, err
	}
	s.NamespaceFrom = ipam.NamespaceFrom
	return s, netconf.ParseNamespaceFrom(ipam.NamespaceFrom)
}

// StickyArgKeys are the CNI_ARGS keys stickiness reads (see ArgKeys for
// when an allocator accepts them).
func StickyArgKeys() []string {
	return []string{netconf.ArgPodNamespace, netconf.ArgNomadNamespace, netconf.ArgPodName, alloc.ArgStickyKey}
}

// StickyKey is the attachment's stable key, held for s.HoldFor: the one
// a selector passed on in prevResult ("sticky": {"key": K, "by": source})
// first, then the sources of s.By in order; no key when none gives one
// (the attachment then allocates as if nothing were sticky). A malformed
// key is code 7 naming where it came from. The namespace is the
// runtime's as s.NamespaceFrom says (netconf.IdentityOf: two that differ
// are code 7), and a key the pod's or job's author chose (the annotation,
// the arg) is scoped to it (alloc.ScopeStickyKey). The migration name is read
// for a "kubevirt" key alone, the allocator's own or one a selector says
// is a VM's: any pod of a namespace can present another's annotation key
// or arg, and a migration name would make it a live pod's second owner.
func StickyKey(conf *netconf.Envelope, cniArgs []netconf.CNIArg, s alloc.Sticky) (alloc.Keyed, error) {
	// Most chains pass no key: a byte search spares them a second decode
	// of prevResult on every ADD.
	if conf.HasPrevResult() && bytes.Contains(conf.PrevResult, []byte(`"sticky"`)) {
		var prev struct {
			Sticky *pool.Sticky `json:"sticky"`
		}
		if err := json.Unmarshal(conf.PrevResult, &prev); err == nil && prev.Sticky != nil && prev.Sticky.Key != "" {
			if err := validStickyKey("prevResult.sticky.key", prev.Sticky.Key); err != nil {
				return alloc.Keyed{}, err
			}
			return keyed(conf, nil, s, prev.Sticky.By, prev.Sticky.Key)
		}
	}
	var (
		annotations map[string]string
		id          *netconf.Identity
	)
	// Only a source that reads the namespace refuses a conflicting one:
	// without a key, the allocator reads none.
	identity := func() (netconf.Identity, error) {
		if id == nil {
			got, err := netconf.IdentityOf(cniArgs, s.NamespaceFrom)
			if err != nil {
				return got, err
			}
			id = &got
		}
		return *id, nil
	}
	for _, by := range s.By {
		key, field := "", ""
		switch by {
		case alloc.StickyByPod:
			who, err := identity()
			if err != nil {
				return alloc.Keyed{}, err
			}
			if who.Namespace != "" && who.PodName != "" {
				key, field = who.Namespace+"/"+who.PodName, "the namespace and CNI_ARGS "+netconf.ArgPodName
			}
		case alloc.StickyByAnnotation, alloc.StickyByKubevirt:
			if annotations == nil {
				var err error
				if annotations, err = PodAnnotations(conf); err != nil {
					return alloc.Keyed{}, err
				}
			}
			if by == alloc.StickyByAnnotation {
				key, field = annotations[alloc.AnnotationStickyKey], annotationField(alloc.AnnotationStickyKey)
				break
			}
			who, err := identity()
			if err != nil {
				return alloc.Keyed{}, err
			}
			key, field = alloc.KubevirtKey(who.Namespace, annotations), annotationField(alloc.AnnotationKubevirtDomain)
		case alloc.StickyByArg:
			key, _ = netconf.Lookup(cniArgs, alloc.ArgStickyKey)
			field = "CNI_ARGS " + alloc.ArgStickyKey
		}
		if key == "" {
			continue
		}
		if err := validStickyKey(field, key); err != nil {
			return alloc.Keyed{}, err
		}
		if by == alloc.StickyByAnnotation || by == alloc.StickyByArg {
			who, err := identity()
			if err != nil {
				return alloc.Keyed{}, err
			}
			key = alloc.ScopeStickyKey(who.Namespace, key)
		}
		return keyed(conf, annotations, s, by, key)
	}
	return alloc.Keyed{}, nil
}

// keyed is key from source by, with its pod's migration name when by is
// "kubevirt". annotations are the pod's when already read, else nil.
func keyed(conf *netconf.Envelope, annotations map[string]string, s alloc.Sticky, by, key string) (alloc.Keyed, error) {
	k := alloc.Keyed{Key: key, HoldFor: s.HoldFor}
	if by != alloc.StickyByKubevirt {
		return k, nil
	}
	if annotations == nil {
		var err error
		if annotations, err = PodAnnotations(conf); err != nil {
			return k, err
		}
	}
	k.Migration = annotations[alloc.AnnotationMigrationJob]
	if k.Migration == "" {
		return k, nil
	}
	return k, validStickyKey(annotationField(alloc.AnnotationMigrationJob), k.Migration)
}

// PodAnnotations are the pod's annotations, as the runtime passes them
// through the io.kubernetes.cri.pod-annotations capability (empty, never
// nil, without them).
func PodAnnotations(conf *netconf.Envelope) (map[string]string, error) {
	var rc struct {
		Annotations map[string]string `json:"io.kubernetes.cri.pod-annotations"`
	}
	if err := conf.DecodeRuntimeConfig(&rc); err != nil {
		return nil, err
	}
	if rc.Annotations == nil {
		return map[string]string{}, nil
	}
	return rc.Annotations, nil
}

func annotationField(name string) string {
	return `runtimeConfig["` + podAnnotationsCap + `"]["` + name + `"]`
}

// validStickyKey: a key is printable and bounded; stores never use it as
// a name (StickyID is), so '/' and the like are fine.
func validStickyKey(field, key string) error {
	if len(key) > maxStickyKey || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return cnierr.InvalidConfig(field, key, fmt.Sprintf("a sticky key is printable and at most %d bytes", maxStickyKey))
	}
	return nil
}
