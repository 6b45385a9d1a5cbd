package etcdtest

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/testkit/pki"
)

// TLSFiles are the PEM files of a test CA and the certificates it signed:
// one for the members (serving 127.0.0.1) and one for clients.
type TLSFiles struct {
	CA, CAKey             string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	OtherCA               string // a second CA that signed nothing the cluster trusts
	OtherCert, OtherKey   string // a client certificate from OtherCA
}

// WriteTLS generates a CA, a server and a client certificate into dir.
func WriteTLS(dir string) (*TLSFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f := &TLSFiles{
		CA: filepath.Join(dir, "ca.pem"), CAKey: filepath.Join(dir, "ca-key.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
		OtherCA:   filepath.Join(dir, "other-ca.pem"),
		OtherCert: filepath.Join(dir, "other.pem"), OtherKey: filepath.Join(dir, "other-key.pem"),
	}
	ca, err := issue(nil, "cniplugins test CA", true, f.CA, f.CAKey)
	if err != nil {
		return nil, err
	}
	if _, err := issue(ca, "127.0.0.1", false, f.ServerCert, f.ServerKey); err != nil {
		return nil, err
	}
	if _, err := issue(ca, "cniplugins-client", false, f.ClientCert, f.ClientKey); err != nil {
		return nil, err
	}
	other, err := issue(nil, "untrusted test CA", true, f.OtherCA, filepath.Join(dir, "other-ca-key.pem"))
	if err != nil {
		return nil, err
	}
	if _, err := issue(other, "cniplugins-client", false, f.OtherCert, f.OtherKey); err != nil {
		return nil, err
	}
	return f, nil
}

// issue makes a key and a certificate for cn, signed by parent (self-signed
// when parent is nil), and writes both as PEM. A leaf serves 127.0.0.1
// and localhost.
func issue(parent *pki.Cert, cn string, isCA bool, certPath, keyPath string) (*pki.Cert, error) {
	r := pki.Request{Subject: pkix.Name{CommonName: cn}, CA: isCA}
	if !isCA {
		r.IPs, r.DNS = []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"}
	}
	return pki.Issue(parent, r, certPath, keyPath)
}

// HTTPClient is a client that trusts the test CA and presents the client
// certificate.
func (f *TLSFiles) HTTPClient() (*http.Client, error) {
	pair, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		return nil, err
	}
	pemCA, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
	}}}, nil
}
