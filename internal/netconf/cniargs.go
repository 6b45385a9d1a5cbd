package netconf

import (
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// MaxCNIArgsLen bounds CNI_ARGS; real runtimes send a few hundred bytes.
const MaxCNIArgsLen = 64 << 10

// CNIArg is one KEY=VALUE pair of CNI_ARGS, in the order given.
type CNIArg struct{ Key, Value string }

// ParseCNIArgs splits CNI_ARGS ("K1=V1;K2=V2"). Order is kept so that
// anything derived from it (requested addresses) is deterministic. A pair
// without '=' or with an empty key is code 4: it came from the environment.
func ParseCNIArgs(s string) ([]CNIArg, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxCNIArgsLen {
		return nil, cnierr.InvalidEnv("CNI_ARGS", clip([]byte(s), 32), "longer than 64 KiB")
	}
	var out []CNIArg
	for _, pair := range strings.Split(s, ";") {
		if pair == "" {
			continue
		}
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, cnierr.InvalidEnv("CNI_ARGS", clip([]byte(pair), 64), "each pair must be KEY=VALUE")
		}
		out = append(out, CNIArg{Key: key, Value: value})
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
