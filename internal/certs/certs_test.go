package certs

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPeerCertificatesAndTheirRenewal(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA("events raftka CA", now)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"*.events-brokers.kafka.svc"}
	peer, err := IssuePeer(ca, names, now)
	if err != nil {
		t.Fatal(err)
	}
	// A TLS stack takes it, for both ends of the transport.
	pair, err := tls.X509KeyPair(peer.Cert, peer.Key)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.Cert)
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "events-2.events-brokers.kafka.svc", CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("usage %v: %v", usage, err)
		}
	}
	if ok, why := Usable(peer, ca.Cert, names, now); !ok {
		t.Fatalf("a new certificate is not usable: %s", why)
	}
	other, _ := NewCA("another", now)
	for name, tc := range map[string]struct {
		peer  Pair
		ca    []byte
		names []string
		at    time.Time
		want  string
	}{
		"a month before its end": {peer, ca.Cert, names, now.Add(LeafLifetime - RenewBefore + time.Hour), "expires"},
		"another CA":             {peer, other.Cert, names, now, "did not sign"},
		"other names":            {peer, ca.Cert, []string{"*.other-brokers.kafka.svc"}, now, "names"},
		"a key of another":       {Pair{Cert: peer.Cert, Key: other.Key}, ca.Cert, names, now, "not the certificate's"},
		"garbage":                {Pair{Cert: []byte("x"), Key: []byte("y")}, ca.Cert, names, now, "not a PEM"},
	} {
		if ok, why := Usable(tc.peer, tc.ca, tc.names, tc.at); ok || !strings.Contains(why, tc.want) {
			t.Errorf("%s: usable %v (%s), want refused for %q", name, ok, why, tc.want)
		}
	}
}

func TestClientCertificatesAndTheirRenewal(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clients, _ := NewCA("events raftka clients CA", now)
	cluster, _ := NewCA("events raftka CA", now)
	alice, err := IssueClient(clients, "alice", now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(alice.Cert, alice.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if got := leaf.Subject.String(); got != "CN=alice" {
		t.Errorf("subject %s, want CN=alice: the listener's principal is the subject", got)
	}
	pool := func(ca Pair) *x509.CertPool {
		p := x509.NewCertPool()
		p.AppendCertsFromPEM(ca.Cert)
		return p
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool(clients), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("as a client: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool(clients), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client certificate serves as a server's")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool(cluster), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the cluster's CA, which the Raft transport trusts, accepts a user's certificate")
	}
	if ok, why := UsableClient(alice, clients.Cert, "alice", now); !ok {
		t.Fatalf("a new certificate is not usable: %s", why)
	}
	for name, tc := range map[string]struct {
		cert Pair
		ca   []byte
		cn   string
		at   time.Time
		why  string
	}{
		"another user's":  {alice, clients.Cert, "bob", now, "subject"},
		"another CA's":    {alice, cluster.Cert, "alice", now, "did not sign"},
		"near its end":    {alice, clients.Cert, "alice", now.Add(LeafLifetime - RenewBefore + time.Hour), "expires"},
		"a key not its":   {Pair{Cert: alice.Cert, Key: cluster.Key}, clients.Cert, "alice", now, "key"},
		"not a PEM block": {Pair{Cert: []byte("x"), Key: alice.Key}, clients.Cert, "alice", now, "PEM"},
	} {
		if ok, why := UsableClient(tc.cert, tc.ca, tc.cn, tc.at); ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: usable %v (%s), want not, saying %q", name, ok, why, tc.why)
		}
	}
}

func TestServerCertificatesAuthenticateNoClient(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ca, _ := NewCA("events raftka CA", now)
	names := []string{"events.kafka.svc", "*.events-brokers.kafka.svc"}
	server, err := IssueServer(ca, names, now)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := Usable(server, ca.Cert, names, now); !ok {
		t.Fatalf("a new certificate is not usable: %s", why)
	}
	pair, _ := tls.X509KeyPair(server.Cert, server.Key)
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "events-0.events-brokers.kafka.svc", CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a listener's certificate passes for a Raft peer's")
	}
}

// TestServerCertificatesCertifyAddresses: an external listener's
// addresses are IP names, which a client dialing the address checks; the
// names compare in any order, and a new address calls for a new
// certificate.
func TestServerCertificatesCertifyAddresses(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ca, _ := NewCA("events raftka CA", now)
	names := []string{"events.kafka.svc", "192.0.2.7", "lb.example.com", "2001:db8::1"}
	server, err := IssueServer(ca, names, now)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := Usable(server, ca.Cert, []string{"2001:db8::1", "lb.example.com", "192.0.2.7", "events.kafka.svc"}, now); !ok {
		t.Fatalf("the same names in another order: %s", why)
	}
	if ok, _ := Usable(server, ca.Cert, append(slices.Clone(names), "192.0.2.8"), now); ok {
		t.Fatal("a certificate without a new address is usable")
	}
	pair, _ := tls.X509KeyPair(server.Cert, server.Key)
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.Cert)
	for _, host := range []string{"192.0.2.7", "2001:db8::1", "lb.example.com"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving %s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "192.0.2.8", CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("an address not named is served")
	}
}

func TestKeysArePKCS8AndOlderSEC1KeysStillServe(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ca, _ := NewCA("events raftka CA", now)
	names := []string{"*.events-brokers.kafka.svc"}
	peer, _ := IssuePeer(ca, names, now)
	for name, key := range map[string][]byte{"the CA's": ca.Key, "a peer's": peer.Key} {
		if block, _ := pem.Decode(key); block == nil || block.Type != "PRIVATE KEY" {
			t.Errorf("%s key is not PKCS#8, which the Java client's PEM key store needs", name)
		}
	}
	// The same keys as an older operator wrote them.
	sec1 := func(p Pair) Pair {
		block, _ := pem.Decode(p.Key)
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
		return Pair{Cert: p.Cert, Key: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})}
	}
	oldCA, oldPeer := sec1(ca), sec1(peer)
	if ok, why := Usable(oldPeer, oldCA.Cert, names, now); !ok {
		t.Errorf("a SEC 1 key of an older operator is not usable: %s", why)
	}
	if _, err := IssuePeer(oldCA, names, now); err != nil {
		t.Errorf("a CA with a SEC 1 key does not sign: %v", err)
	}
}
