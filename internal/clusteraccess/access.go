// Package clusteraccess is how ipam-da-etcd's etcd is reached, as every
// binary reads it: the operators' flags next to --etcd (Access) and the
// rule of ipam.etcd.prefix (Prefix). It holds no network code, so the
// lean binary, which links no etcd client, shares it with the store.
package clusteraccess

import (
	"cmp"
	"strings"
	"time"
)

// DefaultPrefix is where every key lives unless ipam.etcd.prefix says.
const DefaultPrefix = "/cniplugins/"

// Prefix is a key prefix as ipam-da-etcd reads ipam.etcd.prefix, and the
// operators' --prefix: the default when empty, ending in '/' (keys are
// built by appending to it). Whether p is a valid prefix at all is the
// store's to say.
func Prefix(p string) string {
	if p = cmp.Or(p, DefaultPrefix); !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// Access is how an operator reaches etcd: ipam.etcd's fields but the
// node name (an operator reads and releases any node's claims), with the
// timeout as a duration and the TLS files flat, as flags give them.
type Access struct {
	Endpoints                 []string
	Prefix                    string
	Timeout                   time.Duration // 0: ipam.etcd's default
	CAFile, CertFile, KeyFile string        // ipam.etcd.tls
	Username, PasswordFile    string
	AllowPasswordOverHTTP     bool // ipam.etcd.allowPasswordOverHTTP
}
