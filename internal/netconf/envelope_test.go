package netconf

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		conf  string
		code  uint
		field string // must appear in msg or details
	}{
		{name: "minimal", conf: `{"cniVersion":"1.0.0","name":"net"}`},
		{name: "all spec versions", conf: `{"cniVersion":"0.3.0","name":"net"}`},
		{name: "1.1.0", conf: `{"cniVersion":"1.1.0","name":"n-1.x_y"}`},
		{name: "empty", conf: ``, code: 6, field: "stdin"},
		{name: "whitespace", conf: " \n", code: 6, field: "stdin"},
		{name: "array", conf: `[1,2]`, code: 6, field: "stdin"},
		{name: "truncated", conf: `{"cniVersion":"1.0.0","na`, code: 6, field: "stdin"},
		{name: "missing cniVersion", conf: `{"name":"net"}`, code: 7, field: "cniVersion"},
		{name: "unknown cniVersion", conf: `{"cniVersion":"9.9.9","name":"net"}`, code: 1, field: "cniVersion"},
		{name: "cniVersion wrong type", conf: `{"cniVersion":1,"name":"net"}`, code: 7, field: "cniVersion"},
		{name: "missing name", conf: `{"cniVersion":"1.0.0"}`, code: 7, field: "name"},
		{name: "name escapes", conf: `{"cniVersion":"1.0.0","name":"../etc"}`, code: 7, field: "name"},
		{name: "name with slash", conf: `{"cniVersion":"1.0.0","name":"a/b"}`, code: 7, field: "name"},
		{name: "name too long", conf: `{"cniVersion":"1.0.0","name":"` + strings.Repeat("a", 129) + `"}`, code: 7, field: "name"},
		{name: "ipam wrong type", conf: `{"cniVersion":"1.0.0","name":"n","ipam":[]}`, code: 7, field: "ipam"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Parse([]byte(tt.conf))
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if string(env.Raw) != tt.conf {
					t.Errorf("Raw not kept verbatim")
				}
				return
			}
			e := cnierr.As(err)
			if e.Code != tt.code || !strings.Contains(e.Msg+" "+e.Details, tt.field) {
				t.Errorf("error = %+v, want code %d naming %q", e, tt.code, tt.field)
			}
		})
	}
}

func TestPrevResult(t *testing.T) {
	env, err := Parse([]byte(`{"cniVersion":"0.4.0","name":"n","x":{"keep":true},"prevResult":{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Result()
	if err != nil || len(res.IPs) != 1 || res.IPs[0].Address.String() != "10.1.2.3/24" {
		t.Fatalf("Result() = %+v, %v", res, err)
	}
	out, err := env.WithPrevResult([]byte(`{"cniVersion":"0.4.0","ips":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"x":{"keep":true}`) || !strings.Contains(string(out), `"prevResult":{"cniVersion":"0.4.0","ips":[]}`) {
		t.Errorf("WithPrevResult lost or mangled keys: %s", out)
	}
	for _, prev := range []string{
		`{"ips":"x"}`,
		// The cni types accept these, then print "<nil>" for them.
		`{"ips":[{}]}`,
		`{"ips":[null]}`,
		`{"routes":[{"gw":"10.0.0.1"}]}`,
		`{"interfaces":[null]}`,
	} {
		bad, _ := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","prevResult":` + prev + `}`))
		if _, err := bad.Result(); cnierr.Code(err) != cnierr.CodeDecoding {
			t.Errorf("malformed prevResult %s: %v, want code 6", prev, err)
		}
	}
}

func TestParseCNIArgs(t *testing.T) {
	known := []string{"IP", "K8S_POD_NAME"}
	tests := []struct {
		in     string
		want   string
		code   uint
		detail string // a substring the error must carry
	}{
		{in: "", want: "[]"},
		{in: "IgnoreUnknown=1;IP=10.0.0.5", want: "[{IgnoreUnknown 1} {IP 10.0.0.5}]"},
		{in: "K8S_POD_NAME=a;IP=1.2.3.4,::1", want: "[{K8S_POD_NAME a} {IP 1.2.3.4,::1}]"},
		{in: "IgnoreUnknown=TRUE;FOO=bar", want: "[{IgnoreUnknown TRUE} {FOO bar}]"},
		{in: "FOO=bar;IgnoreUnknown=true", want: "[{FOO bar} {IgnoreUnknown true}]"},
		{in: "IP=", want: "[{IP }]"},
		{in: "FOO=bar", code: 4, detail: "FOO"},
		{in: "IgnoreUnknown=0;FOO=bar", code: 4, detail: "FOO"},
		{in: "IgnoreUnknown=maybe;FOO=x", code: 4, detail: "IgnoreUnknown=maybe"},
		{in: "IgnoreUnknown=yes", code: 4, detail: "IgnoreUnknown"},
		{in: "ignoreunknown=1;FOO=x", code: 4, detail: "ignoreunknown"},
		{in: "IP=10.0.0.5;", code: 4, detail: "KEY=VALUE"},
		{in: ";;;", code: 4, detail: "KEY=VALUE"},
		{in: "A=b=c", code: 4, detail: "A=b=c"},
		{in: "novalue", code: 4, detail: "novalue"},
		{in: "=x", code: 4, detail: `""`},
		{in: "IgnoreUnknown=1;=x", want: "[{IgnoreUnknown 1} { x}]"},
		{in: strings.Repeat("a=b;", 20000), code: 4, detail: "64 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.in[:min(len(tt.in), 30)], func(t *testing.T) {
			got, err := ParseCNIArgs(tt.in, known)
			if tt.code != 0 {
				e := cnierr.As(err)
				if e == nil || e.Code != tt.code || !strings.Contains(e.Msg+e.Details, "CNI_ARGS") || !strings.Contains(e.Msg+e.Details, tt.detail) {
					t.Errorf("error = %+v, want code %d naming CNI_ARGS and %s", e, tt.code, tt.detail)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if s := fmtArgs(got); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
	args, _ := ParseCNIArgs("IP=1.1.1.1;IP=2.2.2.2", known)
	if v, _ := Lookup(args, "IP"); v != "2.2.2.2" {
		t.Errorf("Lookup = %q, want the last IP", v)
	}
}

func fmtArgs(a []CNIArg) string {
	if len(a) == 0 {
		return "[]"
	}
	s := "["
	for i, kv := range a {
		if i > 0 {
			s += " "
		}
		s += "{" + kv.Key + " " + kv.Value + "}"
	}
	return s + "]"
}

// WithPrevResult gives every config the same meaning whether it appends
// the key to the runtime's bytes or re-encodes them: exactly one
// prevResult, the new one, and every other key kept.
func TestWithPrevResultForms(t *testing.T) {
	result := `{"cniVersion":"1.0.0","ips":[{"address":"10.1.2.3/24"}]}`
	for _, tc := range []struct{ name, conf string }{
		{"no prevResult", `{"cniVersion":"1.0.0","name":"n","x":[1,{"y":"}"}]}` + "\n"},
		{"a prevResult", `{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[]}}`},
		{"a null prevResult", `{"cniVersion":"1.0.0","name":"n","prevResult":null}`},
		{"another spelling", `{"cniVersion":"1.0.0","name":"n","PrevResult":null}`},
		{"an escaped key", `{"cniVersion":"1.0.0","name":"n","prevResul\u0074":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Parse([]byte(tc.conf))
			if err != nil {
				t.Fatal(err)
			}
			out, err := env.WithPrevResult([]byte(result))
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(string(out)))
			keys := map[string]int{}
			if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
				t.Fatalf("%s: not an object: %v", out, err)
			}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					t.Fatalf("%s: %v", out, err)
				}
				keys[strings.ToLower(tok.(string))]++
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					t.Fatal(err)
				}
			}
			if keys["prevresult"] != 1 || keys["name"] != 1 {
				t.Fatalf("%s: keys %v, want one prevResult", out, keys)
			}
			again, err := Parse(out)
			if err != nil || string(again.PrevResult) != result {
				t.Fatalf("%s: prevResult %s %v", out, again.PrevResult, err)
			}
			// An in-process delegate is handed what parsing its stdin gives.
			d, err := env.ForDelegate([]byte(result))
			if err != nil || !reflect.DeepEqual(d, again) {
				t.Fatalf("ForDelegate = %+v %v, want %+v", d, err, again)
			}
		})
	}
}
