package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/broker/security"
)

// raftTLSFiles writes a Raft certificate of ca, its key and ca into dir.
func raftTLSFiles(t *testing.T, dir string, ca *brokertest.CA, serial int64) *security.RaftTLS {
	t.Helper()
	cert, key := ca.IssuePeer(t, serial, "broker")
	files := &security.RaftTLS{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	for path, data := range map[string][]byte{files.CAFile: ca.PEM, files.CertFile: cert, files.KeyFile: key} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// servePeerHTTP serves, as a broker's HTTP endpoint would, /open to anyone
// and /internal only to peers; it returns the address.
func servePeerHTTP(t *testing.T, p *PeerHTTP) string {
	t.Helper()
	mux := http.NewServeMux()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("/open", ok)
	mux.Handle("/internal", p.OnlyPeers(ok))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(p.Listen(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// status GETs url through client: the status code, or 0 when the request
// failed (a handshake refused).
func status(t *testing.T, client *http.Client, url string) int {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestPeerHTTPServesInternalEndpointsOnlyToRaftPeers(t *testing.T) {
	ca := brokertest.NewCA(t)
	p, err := NewPeerHTTP(raftTLSFiles(t, t.TempDir(), ca, 2), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	addr := servePeerHTTP(t, p)

	// A client that connects and sends nothing holds up no other.
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idle.Close() }()

	plain := &http.Client{Timeout: 5 * time.Second}
	if got := status(t, plain, "http://"+addr+"/open"); got != http.StatusOK {
		t.Errorf("plain HTTP to an open endpoint (the kubelet, Prometheus): %d, want 200", got)
	}
	if got := status(t, plain, "http://"+addr+"/internal"); got != http.StatusForbidden {
		t.Errorf("plain HTTP to an internal endpoint: %d, want 403", got)
	}
	if got := status(t, p.Client(5*time.Second), p.URL(addr, "/internal", nil)); got != http.StatusOK {
		t.Errorf("a peer with its Raft certificate: %d, want 200", got)
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	withCert := func(cert, key []byte) *http.Client {
		cfg := &tls.Config{RootCAs: roots}
		if cert != nil {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	anonymous := withCert(nil, nil)
	if got := status(t, anonymous, "https://"+addr+"/open"); got != http.StatusOK {
		t.Errorf("HTTPS without a certificate to an open endpoint: %d, want 200", got)
	}
	if got := status(t, anonymous, "https://"+addr+"/internal"); got != http.StatusForbidden {
		t.Errorf("HTTPS without a certificate to an internal endpoint: %d, want 403", got)
	}
	stranger := brokertest.NewCA(t)
	if got := status(t, withCert(stranger.IssuePeer(t, 3, "impostor")), "https://"+addr+"/internal"); got == http.StatusOK {
		t.Error("a certificate of another CA was served an internal endpoint")
	}
	// A listener's certificate of the same CA authenticates no client.
	if got := status(t, withCert(ca.IssueServer(t, 4, "127.0.0.1")), "https://"+addr+"/internal"); got == http.StatusOK {
		t.Error("a server-only certificate of the Raft CA was served an internal endpoint")
	}

	// A peer trusts only a server with a certificate of the Raft CA.
	impostor, err := NewPeerHTTP(raftTLSFiles(t, t.TempDir(), stranger, 5), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if got := status(t, p.Client(5*time.Second), p.URL(servePeerHTTP(t, impostor), "/open", nil)); got != 0 {
		t.Errorf("a peer took a server of another CA: %d", got)
	}
}

func TestPeerHTTPWithoutRaftTLSIsPlainAndOpen(t *testing.T) {
	p, err := NewPeerHTTP(nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	addr := servePeerHTTP(t, p)
	if got := p.URL(addr, "/internal", nil); got != "http://"+addr+"/internal" {
		t.Errorf("url %s", got)
	}
	if got := status(t, p.Client(5*time.Second), p.URL(addr, "/internal", nil)); got != http.StatusOK {
		t.Errorf("internal endpoint without Raft TLS: %d, want 200", got)
	}
}
