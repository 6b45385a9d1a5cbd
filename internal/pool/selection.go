package pool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/containernetworking/cni/pkg/types"
	types020 "github.com/containernetworking/cni/pkg/types/020"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
)

// Selection is a selector's answer: an IPAM result plus the pools array,
// and the attachment's sticky key when the selector makes it sticky. It
// converts between spec versions like any result and keeps them all.
type Selection struct {
	Inner  types.Result
	Pools  []Pool
	Sticky *Sticky
	// Choices, on STATUS, are the pool sets an ADD could be given (pool
	// names, each set a subset of Pools); nil means the one set, all of
	// Pools. STATUS fails only when every set holds an exhausted pool.
	Choices [][]string
	// Quota, on ADD and CHECK, is the attachment's tenant quota.
	Quota *Quota
}

// Sticky is a selection's "sticky" object: the key the allocator holds
// the attachment's addresses for (ipamconf.StickyKey reads it first), and
// the source it came from, in ipam.sticky.by's words ("pod",
// "annotation", "kubevirt"). The allocator reads a migration name for a
// "kubevirt" key only, and cannot tell one from its shape: an annotation
// key "vm/x" scoped to its namespace reads "<ns>/vm/x", as a VM's does.
type Sticky struct {
	Key string `json:"key"`
	By  string `json:"by,omitempty"`
}

func (s *Selection) Version() string { return s.Inner.Version() }

func (s *Selection) GetAsVersion(v string) (types.Result, error) {
	inner, err := s.Inner.GetAsVersion(v)
	if err != nil && addressless(s.Inner, v) {
		// A 0.1.0/0.2.0 result cannot be converted without an address,
		// and an ADD's selection has none yet: the selection is then its
		// pools under the bare version, which the allocator decodes.
		inner, err = &types020.Result{CNIVersion: v}, nil
	}
	if err != nil {
		return nil, err
	}
	return &Selection{Inner: inner, Pools: s.Pools, Sticky: s.Sticky, Choices: s.Choices, Quota: s.Quota}, nil
}

// addressless: r holds no address and v is a version whose results need one.
func addressless(r types.Result, v string) bool {
	if old, _ := version.GreaterThanOrEqualTo(v, "0.3.0"); old {
		return false
	}
	cur, err := current.NewResultFromResult(r)
	return err == nil && len(cur.IPs) == 0
}

// MarshalJSON adds pools (and sticky, quota and choices, when set) to the
// inner result's object. The inner result is a CNI result, which has none
// of these keys, so they are appended to its bytes rather than the object
// decoded and encoded again: a selector prints one on every command.
func (s *Selection) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(s.Inner)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, " \t\r\n")
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("inner result is not a JSON object: %.32s", b)
	}
	out := b[: len(b)-1 : len(b)-1]
	return appendFields(out, len(bytes.TrimSpace(out)) > 1, // the object already has a key
		jsonField{"pools", s.Pools, true}, jsonField{"sticky", s.Sticky, s.Sticky != nil},
		jsonField{"quota", s.Quota, s.Quota != nil}, jsonField{"choices", s.Choices, s.Choices != nil})
}

// jsonField is one key of an object written by hand; set false leaves
// it out.
type jsonField struct {
	key string
	v   any
	set bool
}

// appendFields appends the fields that are set to out, an object's bytes
// without its closing brace (sep: already holding a key), and closes it.
func appendFields(out []byte, sep bool, fields ...jsonField) ([]byte, error) {
	for _, f := range fields {
		if !f.set {
			continue
		}
		raw, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		if sep {
			out = append(out, ',')
		}
		sep = true
		out = append(append(append(out, '"'), f.key...), `":`...)
		out = append(out, raw...)
	}
	return append(out, '}'), nil
}

func (s *Selection) Print() error { return s.PrintTo(os.Stdout) }

func (s *Selection) PrintTo(w io.Writer) error {
	b, err := s.MarshalJSON() // json.Marshal(s) would compact it again
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
