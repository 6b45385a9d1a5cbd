package pool

import (
	"encoding/json"
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
// the attachment's addresses for (alloc.StickyKey reads it first).
type Sticky struct {
	Key string `json:"key"`
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

// MarshalJSON merges pools (and sticky and choices, when set) into the
// inner result's object.
func (s *Selection) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(s.Inner)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	if obj["pools"], err = json.Marshal(s.Pools); err != nil {
		return nil, err
	}
	if s.Sticky != nil {
		if obj["sticky"], err = json.Marshal(s.Sticky); err != nil {
			return nil, err
		}
	}
	if s.Quota != nil {
		if obj["quota"], err = json.Marshal(s.Quota); err != nil {
			return nil, err
		}
	}
	if s.Choices != nil {
		if obj["choices"], err = json.Marshal(s.Choices); err != nil {
			return nil, err
		}
	}
	return json.Marshal(obj)
}

func (s *Selection) Print() error { return s.PrintTo(os.Stdout) }

func (s *Selection) PrintTo(w io.Writer) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
