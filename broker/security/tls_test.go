package security

import (
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/brokertest"
)

func TestTLSFilesRefuseIncompleteSettings(t *testing.T) {
	for _, cfg := range []TLSConfig{
		{},
		{CertFile: "c.pem"},
		{CertFile: "c.pem", KeyFile: "k.pem", ClientAuth: "required"},
		{CertFile: "c.pem", KeyFile: "k.pem", ClientAuth: "sometimes"},
		{CertFile: "missing.pem", KeyFile: "missing-key.pem"},
	} {
		if _, err := NewFiles(cfg, slog.Default()); err == nil {
			t.Errorf("%+v was accepted", cfg)
		}
	}
}

// A rotation whose files are caught half written (a new certificate with
// the old key) keeps the certificate served so far until the pair is
// whole again.
func TestTLSFilesKeepTheLastWholePair(t *testing.T) {
	dir := t.TempDir()
	ca := brokertest.NewCA(t)
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	serial := func(f *Files) string {
		cert, _ := f.Current()
		return cert.Leaf.SerialNumber.String()
	}
	cert, key := ca.Issue(t, 1, "broker", false)
	write("cert.pem", cert)
	write("key.pem", key)
	f, err := NewFiles(TLSConfig{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	next, nextKey := ca.Issue(t, 2, "broker", false)
	write("cert.pem", next)
	f.checked = time.Time{}
	if got := serial(f); got != "1" {
		t.Fatalf("with a certificate and a key that do not match, serving serial %s, want 1", got)
	}
	write("key.pem", nextKey)
	f.checked = time.Time{}
	if got := serial(f); got != "2" {
		t.Fatalf("once the pair is whole, serving serial %s, want 2", got)
	}
	cfg, err := f.ServerConfig(Listener{Protocol: SSL}).GetConfigForClient(&tls.ClientHelloInfo{})
	if err != nil || len(cfg.Certificates) != 1 || cfg.ClientAuth != tls.NoClientCert {
		t.Fatalf("listener config: %v, %d certificates, client auth %v", err, len(cfg.Certificates), cfg.ClientAuth)
	}
}
