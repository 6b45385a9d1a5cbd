package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
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
	ca, caKey, err := issue(nil, nil, "cniplugins test CA", true, f.CA, f.CAKey)
	if err != nil {
		return nil, err
	}
	if _, _, err := issue(ca, caKey, "127.0.0.1", false, f.ServerCert, f.ServerKey); err != nil {
		return nil, err
	}
	if _, _, err := issue(ca, caKey, "cniplugins-client", false, f.ClientCert, f.ClientKey); err != nil {
		return nil, err
	}
	other, otherKey, err := issue(nil, nil, "untrusted test CA", true, f.OtherCA, filepath.Join(dir, "other-ca-key.pem"))
	if err != nil {
		return nil, err
	}
	if _, _, err := issue(other, otherKey, "cniplugins-client", false, f.OtherCert, f.OtherKey); err != nil {
		return nil, err
	}
	return f, nil
}

// issue makes a key and a certificate for cn, signed by parent (self-signed
// when parent is nil), and writes both as PEM.
func issue(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, isCA bool, certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	signer, signKey := parent, parentKey
	if parent == nil {
		signer, signKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
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
