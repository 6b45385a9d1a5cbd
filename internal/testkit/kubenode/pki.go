package kubenode

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/testkit/pki"
)

// clusterPKI is what kubeadm would write to /etc/kubernetes/pki: one CA
// for every certificate, and the service accounts' signing key.
type clusterPKI struct {
	ca, apiserver, admin, kubelet, kubeletServing *pki.Cert
	saKey                                         string
}

// serviceIP is the first address of the service range: the API server's
// own "kubernetes" service, which its certificate must name.
const serviceRange, serviceIP = "10.254.0.0/24", "10.254.0.1"

func writePKI(dir, node string) (*clusterPKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &clusterPKI{saKey: filepath.Join(dir, "sa.key")}
	at := func(name string) (string, string) {
		return filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	var err error
	issue := func(dst **pki.Cert, name string, r pki.Request) {
		if err != nil {
			return
		}
		var parent *pki.Cert
		if !r.CA {
			parent = p.ca
		}
		c, k := at(name)
		*dst, err = pki.Issue(parent, r, c, k)
	}
	issue(&p.ca, "ca", pki.Request{Subject: pkix.Name{CommonName: "cniplugins test kubernetes CA"}, CA: true})
	issue(&p.apiserver, "apiserver", pki.Request{Subject: pkix.Name{CommonName: "kube-apiserver"},
		IPs: append(loopback, net.ParseIP(serviceIP)), DNS: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}})
	issue(&p.admin, "admin", pki.Request{Subject: pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}}})
	issue(&p.kubelet, "kubelet", pki.Request{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}})
	issue(&p.kubeletServing, "kubelet-serving", pki.Request{Subject: pkix.Name{CommonName: node}, IPs: loopback, DNS: []string{node, "localhost"}})
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return p, pki.WriteKey(key, p.saKey)
}

// kubeconfig is a kubeconfig for the API server at server, as the holder
// of cert.
func kubeconfig(server string, ca, cert *pki.Cert) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: user
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: test
  context: {cluster: test, user: user}
current-context: test
`, server, ca.CertPath, cert.CertPath, cert.KeyPath)
}

func (n *Node) writeKubeconfigs() error {
	server := fmt.Sprintf("https://127.0.0.1:%d", n.ports.apiserver)
	if err := os.WriteFile(n.Kubeconfig, []byte(kubeconfig(server, n.pki.ca, n.pki.admin)), 0o600); err != nil {
		return err
	}
	return os.WriteFile(n.kubeletKubeconfig(), []byte(kubeconfig(server, n.pki.ca, n.pki.kubelet)), 0o600)
}

func (n *Node) kubeletKubeconfig() string { return filepath.Join(n.Root, "kubelet.kubeconfig") }
