package brokertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"slices"
	"testing"
	"time"
)

// CA issues the certificates of a TLS test.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM encoded.
	PEM []byte
}

// NewCA makes a certificate authority for a test.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "raftka test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Issue returns a certificate and key, PEM encoded, for a server on
// 127.0.0.1 or a client named cn.
func (ca *CA) Issue(t testing.TB, serial int64, cn string, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	return ca.issue(t, serial, cn, nil, usage)
}

// IssuePeer returns a certificate and key, PEM encoded, that serves and
// authenticates on 127.0.0.1: a broker's on a mutual TLS transport.
func (ca *CA) IssuePeer(t testing.TB, serial int64, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.issue(t, serial, cn, nil, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// IssueServer returns a certificate and key, PEM encoded, for a server of
// these DNS names (wildcards allowed).
func (ca *CA) IssueServer(t testing.TB, serial int64, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	return ca.issue(t, serial, names[0], names, x509.ExtKeyUsageServerAuth)
}

// issue makes a certificate for these usages; one that serves names the
// DNS names, or 127.0.0.1 without them.
func (ca *CA) issue(t testing.TB, serial int64, cn string, names []string, usages ...x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"raftka"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages}
	switch {
	case !slices.Contains(usages, x509.ExtKeyUsageServerAuth):
	case names != nil:
		tmpl.DNSNames = names
	default:
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
