package clientsecurity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/internal/certs"
)

func TestClientOptsRefuseWhatNoListenerTakes(t *testing.T) {
	for name, tc := range map[string]struct {
		settings Settings
		says     string
	}{
		"unknown protocol":        {Settings{Protocol: "TLS"}, "want PLAINTEXT"},
		"SASL without a user":     {Settings{Protocol: "sasl_ssl"}, "needs a user name"},
		"unknown mechanism":       {Settings{Mechanism: "GSSAPI", Username: "u"}, "want SCRAM-SHA-512"},
		"a certificate, no key":   {Settings{CertFile: "user.crt"}, "go together"},
		"a CA file that is not":   {Settings{CAFile: "/nonexistent/ca.crt"}, "no such file"},
		"a user implies SASL TLS": {Settings{Username: "u", CAFile: "/nonexistent/ca.crt"}, "no such file"},
	} {
		if _, err := tc.settings.ClientOpts(); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.says)
		}
	}
	for _, ok := range []Settings{{}, {Protocol: "PLAINTEXT"}, {Username: "u", Password: "p"}, {Protocol: "SASL_PLAINTEXT", Mechanism: "scram-sha-256", Username: "u"}} {
		if _, err := ok.ClientOpts(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestTLSConfigTrustsTheCAAndPresentsTheCertificate(t *testing.T) {
	now := time.Now()
	ca, _ := certs.NewCA("clients", now)
	user, err := certs.IssueClient(ca, "alice", now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for file, data := range map[string][]byte{"ca.crt": ca.Cert, "user.crt": user.Cert, "user.key": user.Key, "empty": nil} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := Settings{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "user.crt"), KeyFile: filepath.Join(dir, "user.key")}.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
		t.Fatalf("roots %v, %d certificates", cfg.RootCAs, len(cfg.Certificates))
	}
	if _, err := (Settings{CAFile: filepath.Join(dir, "empty")}).TLSConfig(); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("an empty CA file: %v", err)
	}
}
