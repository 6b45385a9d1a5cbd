// Package netconf is the one config parser every personality shares: the
// network configuration envelope, typed field decoding with CNI error codes,
// prevResult, and CNI_ARGS.
package netconf

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/utils"
	cniversion "github.com/containernetworking/cni/pkg/version"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/version"
)

// MaxNameLen bounds the network name: it becomes a directory name.
const MaxNameLen = 128

// Envelope is the part of a network configuration every personality reads.
// Personality-specific keys stay raw until the personality decodes them.
type Envelope struct {
	CNIVersion    string          `json:"cniVersion"`
	Name          string          `json:"name"`
	Type          string          `json:"type"`
	IPAM          json.RawMessage `json:"ipam"`
	Args          json.RawMessage `json:"args"`
	RuntimeConfig json.RawMessage `json:"runtimeConfig"`
	PrevResult    json.RawMessage `json:"prevResult"`

	// Raw is the configuration exactly as received, for passing on.
	Raw []byte `json:"-"`
	// PrevBuilt is PrevResult as the delegate that printed it built it,
	// when that delegate ran in this process (nil otherwise): a reader
	// may take from it what it would decode from PrevResult.
	PrevBuilt types.Result `json:"-"`

	memo map[any]memoEntry // Memo's
}

// Parse decodes and validates the envelope of stdin.
func Parse(stdin []byte) (*Envelope, error) {
	trimmed := bytes.TrimSpace(stdin)
	if len(trimmed) == 0 {
		return nil, cnierr.New(cnierr.CodeDecoding, "empty network configuration on stdin", "stdin")
	}
	if trimmed[0] != '{' {
		return nil, cnierr.New(cnierr.CodeDecoding, "network configuration is not a JSON object", "stdin starts with %q", clip(trimmed, 16))
	}
	env := &Envelope{Raw: stdin}
	if err := Decode(stdin, "", env); err != nil {
		return nil, err
	}
	if env.CNIVersion == "" {
		return nil, cnierr.MissingConfig("cniVersion")
	}
	if !slices.Contains(version.SpecVersions(), env.CNIVersion) {
		return nil, cnierr.New(cnierr.CodeIncompatibleVersion, "unsupported cniVersion", "cniVersion=%q; supported: %v", clip([]byte(env.CNIVersion), 32), version.SpecVersions())
	}
	if env.Name == "" {
		return nil, cnierr.MissingConfig("name")
	}
	if len(env.Name) > MaxNameLen {
		return nil, cnierr.InvalidConfig("name", clip([]byte(env.Name), 32), "longer than 128 characters")
	}
	if err := utils.ValidateNetworkName(env.Name); err != nil {
		return nil, cnierr.InvalidConfig("name", env.Name, "must match [a-zA-Z0-9][a-zA-Z0-9_.-]*")
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"ipam", env.IPAM}, {"args", env.Args}, {"runtimeConfig", env.RuntimeConfig}, {"prevResult", env.PrevResult}} {
		if t := bytes.TrimSpace(f.raw); !isNull(t) && t[0] != '{' {
			return nil, cnierr.InvalidConfig(f.name, clip(t, 16), "must be a JSON object")
		}
	}
	return env, nil
}

// DecodeIPAM decodes the ipam object into v, naming fields as ipam.<key>.
func (e *Envelope) DecodeIPAM(v any) error {
	if isNull(e.IPAM) {
		return cnierr.MissingConfig("ipam")
	}
	return Decode(e.IPAM, "ipam", v)
}

// DecodeArgs decodes the args section into v; v is left as is when the
// config has none.
func (e *Envelope) DecodeArgs(v any) error { return decodeSection(e.Args, "args", v) }

// DecodeRuntimeConfig decodes runtimeConfig into v; v is left as is when
// the config has none.
func (e *Envelope) DecodeRuntimeConfig(v any) error {
	return decodeSection(e.RuntimeConfig, "runtimeConfig", v)
}

func decodeSection(raw json.RawMessage, field string, v any) error {
	if isNull(raw) {
		return nil
	}
	return Decode(raw, field, v)
}

// HasPrevResult reports whether the runtime (or a previous delegate) passed
// a prevResult.
func (e *Envelope) HasPrevResult() bool { return !isNull(e.PrevResult) }

// Result decodes prevResult into the current result type, whatever the
// config's cniVersion. It returns nil when there is no prevResult.
func (e *Envelope) Result() (*current.Result, error) {
	if !e.HasPrevResult() {
		return nil, nil
	}
	res, err := cniversion.NewResult(e.CNIVersion, e.PrevResult)
	if err != nil {
		return nil, cnierr.New(cnierr.CodeDecoding, "cannot decode prevResult", "prevResult: %v", err)
	}
	cur, err := current.NewResultFromResult(res)
	if err != nil {
		return nil, cnierr.New(cnierr.CodeDecoding, "cannot convert prevResult", "prevResult: %v", err)
	}
	if err := ValidateResult(cur, "prevResult"); err != nil {
		return nil, err
	}
	return cur, nil
}

// ValidateResult rejects what the cni types decode without complaint but
// cannot represent: a null element, an ips entry without an address or a
// route without a destination. Passed on, such a result prints as "<nil>"
// (a selector copies prevResult.ips into its own result; a conversion
// re-encodes it), which the next reader then fails to decode. field names
// the result in the error ("prevResult", or a delegate's "result").
func ValidateResult(r *current.Result, field string) error {
	bad := func(list string, i int, what string) error {
		return cnierr.New(cnierr.CodeDecoding, "cannot decode "+field, "%s.%s[%d]: %s", field, list, i, what)
	}
	for i, intf := range r.Interfaces {
		if intf == nil {
			return bad("interfaces", i, "null")
		}
	}
	for i, ip := range r.IPs {
		switch {
		case ip == nil:
			return bad("ips", i, "null")
		case ip.Address.IP == nil || ip.Address.Mask == nil:
			return bad("ips", i, "address missing")
		}
	}
	for i, rt := range r.Routes {
		if rt == nil {
			return bad("routes", i, "null")
		}
		if rt.Dst.IP == nil || rt.Dst.Mask == nil {
			return bad("routes", i, "dst missing")
		}
	}
	return nil
}

// WithPrevResult returns the raw config with prevResult replaced by result
// (or removed when result is nil), every other key passed through as is.
func (e *Envelope) WithPrevResult(result json.RawMessage) ([]byte, error) {
	if out, ok := e.appendPrevResult(result); ok {
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(e.Raw, &obj); err != nil {
		return nil, cnierr.New(cnierr.CodeDecoding, "cannot re-encode network configuration", "%v", err)
	}
	// Every spelling decoders would take for the key goes.
	for k := range obj {
		if strings.EqualFold(k, "prevResult") {
			delete(obj, k)
		}
	}
	if !isNull(result) {
		obj["prevResult"] = result
	}
	return json.Marshal(obj)
}

// ForDelegate is the configuration a delegate receives: e with prevResult
// replaced by result (nil: e's own), parsed as the delegate would parse
// its stdin (Raw), for a delegate that runs in this process.
func (e *Envelope) ForDelegate(result json.RawMessage) (*Envelope, error) {
	d := *e
	d.memo, d.PrevBuilt = nil, nil
	if result == nil {
		return &d, nil
	}
	raw, err := e.WithPrevResult(result)
	if err != nil {
		return nil, err
	}
	t := bytes.TrimSpace(result)
	if !isNull(t) && t[0] != '{' {
		return nil, cnierr.InvalidConfig("prevResult", clip(t, 16), "must be a JSON object")
	}
	d.Raw, d.PrevResult = raw, json.RawMessage(t)
	if isNull(t) {
		d.PrevResult = nil
	}
	return &d, nil
}

// appendPrevResult is WithPrevResult for the usual config, one without the
// key in any spelling encoding/json would match (it matches keys without
// regard to case, and a key may be written with escapes): the runtime's
// bytes with the key appended, instead of decoding and re-encoding them
// for every delegate.
func (e *Envelope) appendPrevResult(result json.RawMessage) ([]byte, bool) {
	t := bytes.TrimRight(e.Raw, " \t\r\n")
	if isNull(result) || len(t) < 2 || t[len(t)-1] != '}' || bytes.IndexByte(t, '\\') >= 0 ||
		bytes.Contains(bytes.ToLower(t), []byte(`"prevresult"`)) {
		return nil, false
	}
	out := make([]byte, 0, len(t)+len(result)+16)
	out = append(out, t[:len(t)-1]...)
	out = append(out, `,"prevResult":`...)
	out = append(out, bytes.TrimSpace(result)...)
	return append(out, '}'), true
}

// ErrorJSON renders err as the CNI error object, with this config's version.
func ErrorJSON(cniVersion string, err *types.Error) []byte {
	out, _ := json.Marshal(struct {
		CNIVersion string `json:"cniVersion,omitempty"`
		*types.Error
	}{cniVersion, err})
	return append(out, '\n')
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}
