package dsselect

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// What runtimes pass, by name. containerd's CRI plugin and CRI-O set the
// K8S_* CNI_ARGS; podman sets K8S_POD_NAME to the container's name; Nomad
// sets NOMAD_*; the CRI runtimes hand pod annotations over as a capability.
const (
	podAnnotationsCap = "io.kubernetes.cri.pod-annotations"

	// The attachment's own requests, read from its annotations.
	annotationPools = "cniplugins.io/pools"
	annotationIP    = "cniplugins.io/ip"

	annotationsField = `runtimeConfig["` + podAnnotationsCap + `"]`

	// maxListed bounds every list an attachment presents (the pools it
	// asks for, the addresses it requests): a selection holds at most
	// pool.MaxPerAttachment pools and one address per pool, so a longer
	// list could never be granted, and refusing it after reading that many
	// entries keeps the work of a hostile annotation or args.cni small.
	maxListed = pool.MaxPerAttachment
)

// attachment is what one invocation says about the thing being attached,
// in one shape whatever runtime sent it. Rules match against this alone,
// so each runtime's quirks live in normalise and nowhere else.
type attachment struct {
	namespace string // netconf.IdentityOf: the runtime's namespace key
	podName   string // K8S_POD_NAME (podman: the container name)
	ifname    string // CNI_IFNAME

	// args is CNI_ARGS plus the string values of args.cni (Multus
	// cni-args); a CNI_ARGS key wins, since the runtime sets those and the
	// pod's author sets args.cni. The identity keys
	// (netconf.IsIdentityKey) come from CNI_ARGS alone.
	args        map[string]string
	labels      map[string]string // args.cni.labels (CONVENTIONS.md)
	annotations map[string]string // the pod-annotations capability

	// choice is the pools the attachment asks for itself, in order, each
	// with where it was asked (for code 104's details).
	choice []askedPool
	// requestedIPs come from the cniplugins.io/ip annotation.
	requestedIPs []netip.Addr
}

type askedPool struct{ name, from string }

// cniSection is args.cni as the runtimes and Multus fill it. Only the
// keys read here are typed; everything else stays raw.
type cniSection struct {
	Labels []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"labels"`
	Pools []string `json:"pools"`
}

// normalise reads the attachment out of CNI_IFNAME, CNI_ARGS, args.cni and
// runtimeConfig. Malformed input of the config (a label that is not a
// key/value object, an unparsable cniplugins.io/ip) is code 7 naming it.
// Who the attachment is comes from CNI_ARGS as namespaceFrom
// (ipam.namespaceFrom) says (netconf.IdentityOf, the allocators' rule
// too), and is never the pod author's to say: a value of an identity key
// in args.cni that differs from CNI_ARGS' is code 7 naming both.
func normalise(ifname string, cniArgs []netconf.CNIArg, conf *netconf.Envelope, namespaceFrom string) (attachment, error) {
	a := attachment{ifname: ifname, args: map[string]string{}}
	id, err := netconf.IdentityOf(cniArgs, namespaceFrom)
	if err != nil {
		return a, err
	}
	a.namespace, a.podName = id.Namespace, id.PodName
	for _, kv := range cniArgs {
		a.args[kv.Key] = kv.Value // the last assignment wins, as in netconf.Lookup
	}

	var args struct {
		CNI json.RawMessage `json:"cni"`
	}
	if err := conf.DecodeArgs(&args); err != nil {
		return a, err
	}
	cniPools, err := a.readCNISection(args.CNI)
	if err != nil {
		return a, err
	}
	var rc map[string]json.RawMessage
	if err := conf.DecodeRuntimeConfig(&rc); err != nil {
		return a, err
	}
	if raw, ok := rc[podAnnotationsCap]; ok {
		if err := netconf.Decode(raw, annotationsField, &a.annotations); err != nil {
			return a, err
		}
	}
	// Each pool once, where it was first asked: a linear scan, which the
	// lists' bound (maxListed each) keeps small.
	ask := func(from string, names []string) {
		for _, name := range names {
			if !slices.ContainsFunc(a.choice, func(q askedPool) bool { return q.name == name }) {
				a.choice = append(a.choice, askedPool{name, from})
			}
		}
	}
	names, err := splitList(annotationField(annotationPools), a.annotations[annotationPools])
	if err != nil {
		return a, err
	}
	ask("annotation "+annotationPools, names)
	ask("args.cni.pools", cniPools)
	ips, err := splitList(annotationField(annotationIP), a.annotations[annotationIP])
	if err != nil {
		return a, err
	}
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" {
			return a, cnierr.InvalidConfig(annotationField(annotationIP), s, "not an IP address")
		}
		a.requestedIPs = append(a.requestedIPs, ip.Unmap())
	}
	return a, nil
}

// annotationField is where the annotation key sits in the config.
func annotationField(key string) string { return annotationsField + `["` + key + `"]` }

// readCNISection takes labels and the plain string arguments from
// args.cni, and returns args.cni.pools.
func (a *attachment) readCNISection(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var typed cniSection
	if err := netconf.Decode(raw, "args.cni", &typed); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := netconf.Decode(raw, "args.cni", &all); err != nil {
		return nil, err
	}
	if len(typed.Pools) > maxListed {
		return nil, tooMany("args.cni.pools", fmt.Sprintf("%d names", len(typed.Pools)))
	}
	for i, l := range typed.Labels {
		if l.Key == "" {
			return nil, cnierr.InvalidConfig(fmt.Sprintf("args.cni.labels[%d].key", i), `""`, "empty label key")
		}
		if a.labels == nil {
			a.labels = map[string]string{}
		}
		a.labels[l.Key] = l.Value
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		var s string
		if json.Unmarshal(all[k], &s) != nil {
			continue // non-strings are not arguments
		}
		if netconf.IsIdentityKey(k) && s != a.args[k] {
			return nil, netconf.ConflictingIdentity("args.cni."+k, s, "CNI_ARGS "+k, a.args[k])
		}
		if _, set := a.args[k]; !set {
			a.args[k] = s // CNI_ARGS wins
		}
	}
	return typed.Pools, nil
}

// splitList splits a comma-separated annotation value, dropping blanks;
// more than maxListed entries is code 7 naming field, found without
// reading past the first entry too many.
func splitList(field, s string) ([]string, error) {
	var out []string
	for rest := s; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		if len(out) == maxListed {
			return nil, tooMany(field, fmt.Sprintf("%d bytes", len(s)))
		}
		out = append(out, part)
	}
	return out, nil
}

// tooMany is the refusal of a list longer than maxListed; size says how
// long it was, never what it holds, which can be large.
func tooMany(field, size string) error {
	return cnierr.InvalidConfig(field, size, fmt.Sprintf("more than %d entries", maxListed))
}

// presented describes the attachment for code 103's details: what a
// rule could have matched on. Keys only for the maps: annotation values
// can be long, and what an operator needs is which keys were there.
func (a attachment) presented() string {
	return fmt.Sprintf("namespace=%q podName=%q ifname=%q args=[%s] labels=[%s] annotations=[%s]",
		a.namespace, a.podName, a.ifname, keyList(a.args), keyList(a.labels), keyList(a.annotations))
}

// maxKeysShown bounds the keys presented names per map: a pod's author
// may send thousands, and the error would repeat them all.
const maxKeysShown = 32

// keyList is m's keys, sorted, the first maxKeysShown of them.
func keyList(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) > maxKeysShown {
		return strings.Join(keys[:maxKeysShown], " ") + fmt.Sprintf(" ... (%d more)", len(keys)-maxKeysShown)
	}
	return strings.Join(keys, " ")
}
