package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Lifetimes: the CA's is long, as every certificate it signed depends on
// it; a broker certificate's is a year, renewed a month before its end.
const (
	CALifetime     = 10 * 365 * 24 * time.Hour
	LeafLifetime   = 365 * 24 * time.Hour
	RenewBefore    = 30 * 24 * time.Hour
	backdate       = time.Hour
	serialBits     = 128
	pemCertificate = "CERTIFICATE"
	// Keys are PKCS#8, which every Kafka client reads (the Java client's
	// PEM key store takes no other); keys an older operator wrote as SEC 1
	// ("EC PRIVATE KEY") are still read, so that they stay in service.
	pemKey = "PRIVATE KEY"
)

// Pair is a certificate and its key, PEM encoded.
type Pair struct {
	Cert, Key []byte
}

// NewCA makes a self-signed CA named name, valid from now.
func NewCA(name string, now time.Time) (Pair, error) {
	key, serial, err := newKeyAndSerial()
	if err != nil {
		return Pair{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name, Organization: []string{"raftka"}},
		NotBefore: now.Add(-backdate), NotAfter: now.Add(CALifetime),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Pair{}, err
	}
	return encode(der, key)
}

// IssuePeer signs, with ca, a certificate for a peer of a mutual TLS
// transport: it serves the DNS names and authenticates as them.
func IssuePeer(ca Pair, names []string, now time.Time) (Pair, error) {
	return issueFor(ca, names, now, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// IssueServer signs, with ca, a certificate that serves the DNS names and
// authenticates no client: a Kafka listener's, which must not pass for a
// peer of the Raft transport the same CA guards.
func IssueServer(ca Pair, names []string, now time.Time) (Pair, error) {
	return issueFor(ca, names, now, x509.ExtKeyUsageServerAuth)
}

// issueFor certifies names: DNS names, and IP addresses (an external
// listener's load balancer or node) as IP names, which is how a client
// dialing an address checks it.
func issueFor(ca Pair, names []string, now time.Time, usages ...x509.ExtKeyUsage) (Pair, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: names[0], Organization: []string{"raftka"}},
		NotBefore: now.Add(-backdate), NotAfter: now.Add(LeafLifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages}
	for _, name := range names {
		if ip := net.ParseIP(name); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, name)
		}
	}
	return sign(ca, tmpl)
}

// certifiedNames are the names a certificate serves, DNS names then IP
// addresses, as issueFor was given them.
func certifiedNames(cert *x509.Certificate) []string {
	names := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}

// IssueClient signs, with ca, a client certificate whose subject is only
// CN=commonName, so that a Kafka listener's principal for it is
// User:CN=commonName. It authenticates a client and serves nothing.
func IssueClient(ca Pair, commonName string, now time.Time) (Pair, error) {
	return sign(ca, &x509.Certificate{Subject: pkix.Name{CommonName: commonName},
		NotBefore: now.Add(-backdate), NotAfter: now.Add(LeafLifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// sign makes a fresh key and has ca sign tmpl for it, with a random
// serial.
func sign(ca Pair, tmpl *x509.Certificate) (Pair, error) {
	caCert, caKey, err := parse(ca)
	if err != nil {
		return Pair{}, fmt.Errorf("the CA: %w", err)
	}
	key, serial, err := newKeyAndSerial()
	if err != nil {
		return Pair{}, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return Pair{}, err
	}
	return encode(der, key)
}

// Usable tells whether a peer certificate can stay in service at now: it
// parses, the CA signed it, it names exactly names, and it is not within
// RenewBefore of its end. Otherwise why says what is wrong.
func Usable(peer Pair, caCert []byte, names []string, now time.Time) (ok bool, why string) {
	cert, why := issued(peer, caCert, now)
	switch {
	case why != "":
		return false, why
	case !sameNames(certifiedNames(cert), names):
		return false, fmt.Sprintf("it names %v, not %v", certifiedNames(cert), names)
	}
	return true, ""
}

// sameNames compares names in any order.
func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// UsableClient tells, as Usable, whether a client certificate can stay in
// service: its subject must be CN=commonName alone.
func UsableClient(client Pair, caCert []byte, commonName string, now time.Time) (ok bool, why string) {
	cert, why := issued(client, caCert, now)
	switch {
	case why != "":
		return false, why
	case cert.Subject.String() != "CN="+commonName:
		return false, fmt.Sprintf("its subject is %s, not CN=%s", cert.Subject, commonName)
	}
	return true, ""
}

// issued parses a certificate the CA should have signed and says what
// keeps it from service: a parse error, another signer, or its end within
// RenewBefore.
func issued(p Pair, caCert []byte, now time.Time) (*x509.Certificate, string) {
	cert, _, err := parse(p)
	if err != nil {
		return nil, err.Error()
	}
	ca, err := parseCertificate(caCert)
	if err != nil {
		return nil, "the CA certificate: " + err.Error()
	}
	switch {
	case cert.CheckSignatureFrom(ca) != nil:
		return nil, "the cluster's CA did not sign it"
	case now.Add(RenewBefore).After(cert.NotAfter):
		return nil, fmt.Sprintf("it expires %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return cert, ""
}

// newKeyAndSerial is a certificate's fresh P-256 key and random serial.
func newKeyAndSerial() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), serialBits))
	return key, serial, err
}

func encode(der []byte, key *ecdsa.PrivateKey) (Pair, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{Cert: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		Key: pem.EncodeToMemory(&pem.Block{Type: pemKey, Bytes: keyDER})}, nil
}

func parse(p Pair) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certBlock, _ := pem.Decode(p.Cert)
	keyBlock, _ := pem.Decode(p.Key)
	if certBlock == nil || keyBlock == nil {
		return nil, nil, errors.New("not a PEM certificate and key")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := parseKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, errors.New("the key is not the certificate's")
	}
	return cert, key, nil
}

// parseKey reads a PKCS#8 or SEC 1 EC key.
func parseKey(der []byte) (*ecdsa.PrivateKey, error) {
	if key, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		ec, ok := key.(*ecdsa.PrivateKey)
		if !ok {
			return nil, errors.New("the key is not an ECDSA key")
		}
		return ec, nil
	}
	return x509.ParseECPrivateKey(der)
}
