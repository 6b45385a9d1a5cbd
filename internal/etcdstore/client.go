package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"hash/fnv"
	"os"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// stateDir holds what the etcd client remembers between execs (its auth
// token, the members that failed lately, the fence buckets' revisions):
// tmpfs, gone at reboot, root's alone.
const stateDir = "/run/cniplugins/etcd"

// newClient reads the TLS and password files and prepares a client whose
// deadline is now + the timeout; nothing is sent yet.
func newClient(c *etcdConf) (*etcdkv.Client, error) {
	// The fence revisions remembered are the node's under the prefix
	// (fence.go), whichever endpoints the config lists.
	// Each node starts with the endpoint its name hashes to, which
	// spreads nodes over the members.
	h := fnv.New32a()
	h.Write([]byte(c.NodeName))
	cfg := etcdkv.Config{Endpoints: c.Endpoints, Timeout: c.timeout, Username: c.Username, First: int(h.Sum32() % uint32(len(c.Endpoints))),
		StateDir: stateDir, StateKey: c.Prefix + "\x00" + c.NodeName}
	if c.TLS != nil {
		t, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		cfg.TLS = t
	}
	if c.PasswordFile != "" {
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, cnierr.InvalidConfig("ipam.etcd.passwordFile", c.PasswordFile, "cannot be read: "+err.Error())
		}
		cfg.Password = strings.TrimRight(string(b), "\r\n")
	}
	return etcdkv.New(cfg), nil
}

// config loads the TLS files.
func (t *tlsFiles) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, cnierr.InvalidConfig("ipam.etcd.tls.caFile", t.CAFile, "cannot be read: "+err.Error())
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, cnierr.InvalidConfig("ipam.etcd.tls.caFile", t.CAFile, "holds no PEM certificate")
		}
	}
	if t.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, cnierr.InvalidConfig("ipam.etcd.tls.certFile", t.CertFile, "cannot load the key pair: "+err.Error())
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
