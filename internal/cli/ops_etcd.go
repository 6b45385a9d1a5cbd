package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

// etcdFlags are --etcd and its companions on leases, release and gc:
// with --etcd the command acts on ipam-da-etcd's claims through the
// flavour's Etcd backend instead of the local data dir. Every flavour
// parses them, so that the lean one can refuse --etcd by saying where it
// lives rather than "unknown flag"; there they are hidden but --etcd.
type etcdFlags struct {
	open func(ops.EtcdConfig) (ops.Remote, error)
	conf ops.EtcdConfig
	node string
}

// errNeedsFull is the lean flavour's answer to --etcd.
var errNeedsFull = errors.New("--etcd needs the full flavour: run cniplugins-full (install it with `install-symlinks.sh --flavour full`)")

// etcdOnly are the flags that mean nothing without --etcd.
func etcdOnly() []string {
	return []string{"node", "prefix", "timeout", "cacert", "cert", "key", "user", "password-file"}
}

func (e *etcdFlags) add(c *cobra.Command, open func(ops.EtcdConfig) (ops.Remote, error), nodeUsage string) {
	e.open = open
	f := c.Flags()
	etcdUsage := "act on ipam-da-etcd's claims in this etcd cluster (client URLs, comma-separated) instead of the data dir"
	if open == nil {
		etcdUsage += " (full flavour only: cniplugins-full)"
	}
	f.StringSliceVar(&e.conf.Endpoints, "etcd", nil, etcdUsage)
	f.StringVar(&e.node, "node", "", "with --etcd: "+nodeUsage)
	f.StringVar(&e.conf.Prefix, "prefix", "", "with --etcd: key prefix (ipam.etcd.prefix; default /cniplugins/)")
	f.DurationVar(&e.conf.Timeout, "timeout", 0, "with --etcd: how long to wait for etcd (ipam.etcd.timeout; default 5s)")
	f.StringVar(&e.conf.CAFile, "cacert", "", "with --etcd: CA bundle to verify the members (ipam.etcd.tls.caFile)")
	f.StringVar(&e.conf.CertFile, "cert", "", "with --etcd: client certificate (ipam.etcd.tls.certFile)")
	f.StringVar(&e.conf.KeyFile, "key", "", "with --etcd: client key (ipam.etcd.tls.keyFile)")
	f.StringVar(&e.conf.Username, "user", "", "with --etcd: etcd user name (ipam.etcd.username)")
	f.StringVar(&e.conf.PasswordFile, "password-file", "", "with --etcd: file holding the user's password (ipam.etcd.passwordFile)")
	if open == nil {
		for _, n := range etcdOnly() {
			_ = f.MarkHidden(n)
		}
	}
}

// remote is the etcd backend when --etcd was given, nil (and no error)
// when it was not. It refuses flags of the other backend: etcd's without
// --etcd, the data dir's with it.
func (e *etcdFlags) remote(c *cobra.Command) (ops.Remote, error) {
	f := c.Flags()
	if !f.Changed("etcd") {
		for _, n := range etcdOnly() {
			if f.Changed(n) {
				return nil, fmt.Errorf("--%s needs --etcd", n)
			}
		}
		return nil, nil
	}
	if e.open == nil {
		return nil, errNeedsFull
	}
	for _, n := range []string{"data-dir", "lock-timeout"} {
		if f.Changed(n) {
			return nil, fmt.Errorf("--%s is for the local state, not with --etcd", n)
		}
	}
	return e.open(e.conf)
}
