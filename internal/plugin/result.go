package plugin

import (
	"io"
	"os"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/types/create"
	cniversion "github.com/containernetworking/cni/pkg/version"

	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/version"
)

// RawResult is a result as another plugin printed it. It is passed on
// verbatim when its version is already the one asked for, so whatever the
// delegate said (including keys this project does not know) reaches the
// runtime unchanged.
type RawResult struct {
	Bytes      []byte
	CNIVersion string
}

// NewRawResult wraps out, reading its cniVersion.
func NewRawResult(out []byte) (*RawResult, error) {
	ver, err := create.DecodeVersion(out)
	if err != nil {
		return nil, err
	}
	return &RawResult{Bytes: out, CNIVersion: ver}, nil
}

func (r *RawResult) Version() string { return r.CNIVersion }

// GetAsVersion converts only when needed, and only a result Decode
// accepts.
func (r *RawResult) GetAsVersion(ver string) (types.Result, error) {
	if ver == r.CNIVersion {
		return r, nil
	}
	res, err := r.Decode()
	if err != nil {
		return nil, err
	}
	return res.GetAsVersion(ver)
}

// Decode is the result as the cni types read it in its CNIVersion, which
// must also be one they can print back: they accept entries they cannot
// (an address-less ip) and would re-encode them as "<nil>", turning a
// delegate's mistake into output nobody can decode.
func (r *RawResult) Decode() (types.Result, error) {
	res, err := create.Create(r.CNIVersion, r.Bytes)
	if err != nil {
		return nil, err
	}
	cur, err := current.GetResult(res)
	if err != nil {
		return nil, err
	}
	return res, netconf.ValidateResult(cur, "result")
}

// Print is part of types.Result; the dispatcher only ever calls PrintTo.
func (r *RawResult) Print() error { return r.PrintTo(os.Stdout) }

func (r *RawResult) PrintTo(w io.Writer) error {
	_, err := w.Write(r.Bytes)
	return err
}

// versionResult prints the VERSION answer through the same path as results.
type versionResult struct{}

func (versionResult) Version() string                             { return "" }
func (v versionResult) GetAsVersion(string) (types.Result, error) { return v, nil }
func (v versionResult) Print() error                              { return v.PrintTo(os.Stdout) }
func (versionResult) PrintTo(w io.Writer) error {
	return cniversion.PluginSupports(version.SpecVersions()...).Encode(w)
}
