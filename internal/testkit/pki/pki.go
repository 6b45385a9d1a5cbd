// Package pki issues the short-lived certificates of the tests' own
// clusters (etcd's, Kubernetes'): a CA and the leaves it signs, written
// as PEM files.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"time"
)

// Cert is an issued certificate, its key and where both were written.
type Cert struct {
	Cert              *x509.Certificate
	Key               *ecdsa.PrivateKey
	CertPath, KeyPath string
}

// Request is what a certificate says of its holder.
type Request struct {
	Subject pkix.Name
	CA      bool
	IPs     []net.IP
	DNS     []string
}

// Issue makes a key and a certificate for r, signed by parent (self-signed
// when parent is nil), valid for a day, for servers and clients alike, and
// writes both as PEM to certPath and keyPath.
func Issue(parent *Cert, r Request, certPath, keyPath string) (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      r.Subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  r.IPs,
		DNSNames:     r.DNS,
	}
	if r.CA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	signer, signKey := tmpl, key
	if parent != nil {
		signer, signKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := WriteKey(key, keyPath); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	return &Cert{Cert: cert, Key: key, CertPath: certPath, KeyPath: keyPath}, nil
}

// WriteKey writes key as a PEM "EC PRIVATE KEY".
func WriteKey(key *ecdsa.PrivateKey, path string) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
