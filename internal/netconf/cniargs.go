package netconf

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// MaxCNIArgsLen bounds CNI_ARGS; real runtimes send a few hundred bytes.
const MaxCNIArgsLen = 64 << 10

// maxUnknownNamed bounds the unknown keys an error names.
const maxUnknownNamed = 16

// IgnoreUnknown is the CNI_ARGS key that lets unknown keys through.
const IgnoreUnknown = "IgnoreUnknown"

// CNIArg is one KEY=VALUE pair of CNI_ARGS, in the order given.
type CNIArg struct{ Key, Value string }

// ParseCNIArgs splits CNI_ARGS ("K1=V1;K2=V2") with the rules of the cni
// library's types.LoadArgs, which host-local and most upstream plugins
// apply: every pair is exactly KEY=VALUE (so an empty pair, as a trailing
// ';' makes, and "A=b=c" are errors); IgnoreUnknown must be a boolean
// ("1", "true", "0", "false", any case); a key outside known is an error
// unless IgnoreUnknown is true. Failures are code 4 naming the pair or
// key. Every pair is returned, unknown ones too, in order, so that
// anything derived from them is deterministic.
func ParseCNIArgs(s string, known []string) ([]CNIArg, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxCNIArgsLen {
		return nil, cnierr.InvalidEnv("CNI_ARGS", clip([]byte(s), 32), "longer than 64 KiB")
	}
	var (
		out     []CNIArg
		unknown []string
		ignore  bool
	)
	for _, pair := range strings.Split(s, ";") {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(value, "=") {
			return nil, cnierr.InvalidEnv("CNI_ARGS", clip([]byte(pair), 64), "each pair must be exactly KEY=VALUE")
		}
		switch {
		case key == IgnoreUnknown:
			// types.UnmarshallableBool's rule.
			switch strings.ToLower(value) {
			case "1", "true":
				ignore = true
			case "0", "false":
				ignore = false
			default:
				return nil, cnierr.InvalidEnv("CNI_ARGS", clip([]byte(pair), 64), "IgnoreUnknown must be 1, true, 0 or false")
			}
		case len(unknown) < maxUnknownNamed && !slices.Contains(known, key) && !slices.Contains(unknown, key):
			// Bounded, so that 64 KiB of distinct keys costs linear time.
			unknown = append(unknown, key)
		}
		out = append(out, CNIArg{Key: key, Value: value})
	}
	if len(unknown) > 0 && !ignore {
		return nil, cnierr.New(cnierr.CodeInvalidEnv, fmt.Sprintf("unknown CNI_ARGS key %q", unknown[0]),
			"CNI_ARGS keys %q are not known here (known: %q); set IgnoreUnknown=1 to pass them", unknown, known)
	}
	return out, nil
}

// Lookup returns the value of the last pair named key.
func Lookup(args []CNIArg, key string) (string, bool) {
	for i := len(args) - 1; i >= 0; i-- {
		if args[i].Key == key {
			return args[i].Value, true
		}
	}
	return "", false
}
