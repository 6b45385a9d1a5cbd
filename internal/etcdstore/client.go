package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"hash/fnv"
	"os"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// stateDir holds what the etcd client remembers between execs (its auth
// token, the members that failed lately, the fence buckets' revisions):
// tmpfs, gone at reboot, root's alone.
const stateDir = "/run/cniplugins/etcd"

// connect reads the TLS and password files and prepares an operation of
// node c.NodeName at now, whose client's deadline is now + the timeout;
// nothing is sent yet.
func connect(c *etcdConf, now time.Time, log *logging.Logger) (*Operation, error) {
	// The fence revisions remembered are the node's under the prefix
	// (fence.go), whichever endpoints the config lists.
	// Each node starts with the endpoint its name hashes to, which
	// spreads nodes over the members.
	h := fnv.New32a()
	h.Write([]byte(c.NodeName))
	cfg := etcdkv.Config{Endpoints: c.Endpoints, Timeout: c.timeout, Username: c.Username, First: int(h.Sum32() % uint32(len(c.Endpoints))),
		StateDir: stateDir, StateKey: c.Prefix + "\x00" + c.NodeName}
	if t := c.TLS; t != nil {
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return nil, cnierr.InvalidConfig("ipam.etcd.tls.caFile", t.CAFile, "cannot be read: "+err.Error())
			}
			cfg.TLS.RootCAs = x509.NewCertPool()
			if !cfg.TLS.RootCAs.AppendCertsFromPEM(pem) {
				return nil, cnierr.InvalidConfig("ipam.etcd.tls.caFile", t.CAFile, "holds no PEM certificate")
			}
		}
		if t.CertFile != "" {
			pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return nil, cnierr.InvalidConfig("ipam.etcd.tls.certFile", t.CertFile, "cannot load the key pair: "+err.Error())
			}
			cfg.TLS.Certificates = []tls.Certificate{pair}
		}
	}
	if c.PasswordFile != "" {
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, cnierr.InvalidConfig("ipam.etcd.passwordFile", c.PasswordFile, "cannot be read: "+err.Error())
		}
		cfg.Password = strings.TrimRight(string(b), "\r\n")
	}
	return &Operation{cl: etcdkv.New(cfg), keys: layout{prefix: c.Prefix}, node: c.NodeName, now: now, log: log, nonce: newClaimID()}, nil
}
