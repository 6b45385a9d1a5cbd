package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// backendFlags choose the state backend of leases, release and gc, once
// per command: the data dir (--data-dir, --lock-timeout: ops.Local) or,
// with --etcd and its companions, the flavour's etcd backend on
// ipam-da-etcd's claims. Every flavour parses the etcd flags, so that the
// lean one can refuse --etcd by saying where it lives rather than
// "unknown flag"; there they are hidden but --etcd.
type backendFlags struct {
	local stateFlags
	open  func(clusteraccess.Access) (ops.Backend, error) // Flavour.Etcd
	etcd  clusteraccess.Access
	node  string
}

// etcdOnly are the flags that mean nothing without --etcd.
func etcdOnly() []string {
	return []string{"node", "prefix", "timeout", "cacert", "cert", "key", "user", "password-file", "allow-password-over-http"}
}

// add gives c the flags of both backends; lock adds --lock-timeout (the
// commands that write), nodeUsage says what --node does in c ("": c has
// none).
func (b *backendFlags) add(c *cobra.Command, open func(clusteraccess.Access) (ops.Backend, error), lock bool, nodeUsage string) {
	b.local.add(c, lock)
	b.open = open
	f := c.Flags()
	f.StringSliceVar(&b.etcd.Endpoints, "etcd", nil, fullOnlyUsage("act on ipam-da-etcd's claims in this etcd cluster (client URLs, comma-separated) instead of the data dir", open != nil))
	if nodeUsage != "" { // a command that reads every node's claims has no --node
		f.StringVar(&b.node, "node", "", "with --etcd: "+nodeUsage)
	}
	f.StringVar(&b.etcd.Prefix, "prefix", "", "with --etcd: key prefix (ipam.etcd.prefix; default /cniplugins/)")
	// An operator's listing reads whole prefixes (every node's index keys)
	// that no CNI command reads: more time than a plugin's default.
	f.DurationVar(&b.etcd.Timeout, "timeout", 30*time.Second, "with --etcd: how long to wait for etcd (as ipam.etcd.timeout)")
	f.StringVar(&b.etcd.CAFile, "cacert", "", "with --etcd: CA bundle to verify the members (ipam.etcd.tls.caFile)")
	f.StringVar(&b.etcd.CertFile, "cert", "", "with --etcd: client certificate (ipam.etcd.tls.certFile)")
	f.StringVar(&b.etcd.KeyFile, "key", "", "with --etcd: client key (ipam.etcd.tls.keyFile)")
	f.StringVar(&b.etcd.Username, "user", "", "with --etcd: etcd user name (ipam.etcd.username)")
	f.StringVar(&b.etcd.PasswordFile, "password-file", "", "with --etcd: file holding the user's password (ipam.etcd.passwordFile)")
	f.BoolVar(&b.etcd.AllowPasswordOverHTTP, "allow-password-over-http", false, "with --etcd: send --user's password to a non-loopback http:// endpoint in clear (ipam.etcd.allowPasswordOverHTTP)")
	if open == nil {
		for _, n := range etcdOnly() {
			_ = f.MarkHidden(n)
		}
	}
}

// outputBackend is backend for a command that writes in out's format,
// checked first: a wrong -o fails before any store is opened.
func (b *backendFlags) outputBackend(c *cobra.Command, out *outputFlags) (ops.Backend, error) {
	if err := out.check(); err != nil {
		return nil, err
	}
	return b.backend(c)
}

// backend is the one backend the flags choose: the flavour's etcd
// backend with --etcd, else the data dir. It refuses flags of the other
// backend: etcd's without --etcd, the data dir's with it.
func (b *backendFlags) backend(c *cobra.Command) (ops.Backend, error) {
	f := c.Flags()
	if !f.Changed("etcd") {
		for _, n := range etcdOnly() {
			if f.Changed(n) {
				return nil, fmt.Errorf("--%s needs --etcd", n)
			}
		}
		return ops.Local{DataDir: b.local.dataDir, LockTimeout: b.local.lockTimeout}, nil
	}
	if b.open == nil { // the lean flavour: say where --etcd lives
		return nil, errors.New("--etcd needs the full flavour: run cniplugins-full (install it with `install-symlinks.sh --flavour full`)")
	}
	for _, n := range []string{"data-dir", "lock-timeout"} {
		if f.Changed(n) {
			return nil, fmt.Errorf("--%s is for the local state, not with --etcd", n)
		}
	}
	return b.open(b.etcd)
}
