package netconf

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	cniversion "github.com/containernetworking/cni/pkg/version"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/version"
)

// checkTyped fails unless err is a typed CNI error with one of codes whose
// rendering is one JSON object.
func checkTyped(t *testing.T, err error, codes ...uint) *types.Error {
	t.Helper()
	e := cnierr.As(err)
	if !slices.Contains(codes, e.Code) {
		t.Fatalf("error code %d (%s: %s), want one of %v", e.Code, e.Msg, e.Details, codes)
	}
	var back map[string]any
	if err := json.Unmarshal(ErrorJSON("1.0.0", e), &back); err != nil {
		t.Fatalf("error does not render as one JSON object: %v", err)
	}
	return e
}

// section decodes a raw section for comparison: absent and null are the
// same, and re-encoding may only change its spelling (white space, string
// escapes), never its value.
func section(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	if isNull(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("section %q is not valid JSON: %v", raw, err)
	}
	return v
}

// FuzzParse: Parse never panics, fails only with codes 1, 6 or 7, and a
// config it accepts re-validates: parse → marshal → parse gives the same
// envelope.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := Parse(data)
		if err != nil {
			checkTyped(t, err, cnierr.CodeIncompatibleVersion, cnierr.CodeDecoding, cnierr.CodeInvalidConfig)
			return
		}
		if !bytes.Equal(env.Raw, data) {
			t.Fatalf("Raw is not the input verbatim")
		}
		out, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("accepted envelope does not marshal: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("re-encoded envelope %s rejected: %v", out, err)
		}
		if again.CNIVersion != env.CNIVersion || again.Name != env.Name || again.Type != env.Type {
			t.Fatalf("envelope changed: %+v -> %+v", env, again)
		}
		for _, p := range [][2]json.RawMessage{{env.IPAM, again.IPAM}, {env.Args, again.Args},
			{env.RuntimeConfig, again.RuntimeConfig}, {env.PrevResult, again.PrevResult}} {
			if a, b := section(t, p[0]), section(t, p[1]); !reflect.DeepEqual(a, b) {
				t.Fatalf("section changed: %s -> %s", p[0], p[1])
			}
		}
		// A prevResult that Parse let through is decoded without panics
		// and either fails as code 6 or converts to every spec version.
		checkResult(t, env)
	})
}

// FuzzResult: prevResult parsing and version conversion. The input is a
// prevResult object; it is wrapped into a config of every spec version.
func FuzzResult(f *testing.F) {
	f.Fuzz(func(t *testing.T, prev []byte) {
		if !json.Valid(prev) || !bytes.HasPrefix(bytes.TrimSpace(prev), []byte("{")) {
			return
		}
		for _, v := range version.SpecVersions() {
			conf := []byte(`{"cniVersion":"` + v + `","name":"n","prevResult":` + string(prev) + `}`)
			env, err := Parse(conf)
			if err != nil {
				t.Fatalf("config with an object prevResult rejected: %v", err)
			}
			checkResult(t, env)
		}
	})
}

// checkResult decodes env's prevResult and converts it to every version:
// failures are code 6 (or 1 for an impossible conversion), a converted
// result prints as JSON that decodes again in its version.
func checkResult(t *testing.T, env *Envelope) {
	t.Helper()
	res, err := env.Result()
	if err != nil {
		checkTyped(t, err, cnierr.CodeDecoding)
		return
	}
	if !env.HasPrevResult() {
		if res != nil {
			t.Fatalf("no prevResult but Result() = %+v", res)
		}
		return
	}
	if res == nil {
		t.Fatalf("prevResult present but Result() = nil")
	}
	for _, v := range version.SpecVersions() {
		conv, err := res.GetAsVersion(v)
		if err != nil {
			continue // e.g. 0.3.x cannot express some 1.x results
		}
		var buf bytes.Buffer
		if err := conv.PrintTo(&buf); err != nil {
			t.Fatalf("converted result does not print: %v", err)
		}
		if _, err := cniversion.NewResult(v, buf.Bytes()); err != nil {
			t.Fatalf("result converted to %s does not decode again: %v\n%s", v, err, buf.Bytes())
		}
	}
}

// FuzzParseCNIArgs: pairs come back in order, never containing the
// separators, and joining them again parses to the same pairs. Failures
// are code 4 naming CNI_ARGS.
func FuzzParseCNIArgs(f *testing.F) {
	fuzzKnownArgs := []string{"IP", "K8S_POD_NAME", "K8S_POD_NAMESPACE"} // the seeds use them
	f.Fuzz(func(t *testing.T, s string) {
		args, err := ParseCNIArgs(s, fuzzKnownArgs)
		if err != nil {
			e := checkTyped(t, err, cnierr.CodeInvalidEnv)
			if !strings.Contains(e.Msg, "CNI_ARGS") {
				t.Fatalf("error does not name CNI_ARGS: %+v", e)
			}
			return
		}
		parts := make([]string, len(args))
		for i, a := range args {
			if strings.ContainsAny(a.Key, "=;") || strings.ContainsAny(a.Value, "=") || strings.Contains(a.Value, ";") {
				t.Fatalf("bad pair %+v from %q", a, s)
			}
			parts[i] = a.Key + "=" + a.Value
			if v, ok := Lookup(args, a.Key); !ok || (v != a.Value && !slices.ContainsFunc(args[i+1:], func(b CNIArg) bool { return b.Key == a.Key })) {
				t.Fatalf("Lookup(%q) = %q, %v", a.Key, v, ok)
			}
		}
		again, err := ParseCNIArgs(strings.Join(parts, ";"), fuzzKnownArgs)
		if err != nil || !slices.Equal(again, args) {
			t.Fatalf("re-joined args parse differently: %v, %v vs %v", err, again, args)
		}
	})
}
