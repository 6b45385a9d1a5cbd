package pool

import (
	"encoding/json"
	"io"
	"os"

	"github.com/containernetworking/cni/pkg/types"
)

// Selection is a selector's answer: an IPAM result plus the pools array.
// It converts between spec versions like any result and keeps its pools.
type Selection struct {
	Inner types.Result
	Pools []Pool
}

func (s *Selection) Version() string { return s.Inner.Version() }

func (s *Selection) GetAsVersion(v string) (types.Result, error) {
	inner, err := s.Inner.GetAsVersion(v)
	if err != nil {
		return nil, err
	}
	return &Selection{Inner: inner, Pools: s.Pools}, nil
}

// MarshalJSON merges pools into the inner result's object.
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
