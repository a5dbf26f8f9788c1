package certs

import (
	"bytes"
	"crypto/ecdsa"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// TestJavaKeyAndTrustStores: a client's certificate and key, and a CA's
// certificate, as PKCS#12 stores that Java's keytool opens with their
// password (and not with another): a key entry with its chain up to the
// CA, and a trusted certificate. A store that holds what is wanted is
// kept byte for byte; one of an earlier certificate, or that its password
// does not open, is made again under the same password.
func TestJavaKeyAndTrustStores(t *testing.T) {
	now := time.Now()
	ca, _ := NewCA("events raftka clients CA", now)
	client, err := IssueClient(ca, "orders-app", now)
	if err != nil {
		t.Fatal(err)
	}
	keyStore, err := EnsureKeyStore(Store{}, client, ca.Cert)
	if err != nil {
		t.Fatal(err)
	}
	trustStore, err := EnsureTrustStore(Store{}, ca.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if len(keyStore.Password) < 20 || len(trustStore.Password) < 20 || keyStore.Password == trustStore.Password {
		t.Fatalf("passwords %q and %q", keyStore.Password, trustStore.Password)
	}
	if again, _ := EnsureKeyStore(keyStore, client, ca.Cert); !bytes.Equal(again.Data, keyStore.Data) {
		t.Error("a key store that holds the certificate is made again")
	}
	if again, _ := EnsureTrustStore(trustStore, ca.Cert); !bytes.Equal(again.Data, trustStore.Data) {
		t.Error("a trust store that holds the CA is made again")
	}
	key, cert, chain, err := pkcs12.DecodeChain(keyStore.Data, keyStore.Password)
	if err != nil {
		t.Fatal(err)
	}
	wantCert, wantKey, _ := parse(client)
	if k, ok := key.(*ecdsa.PrivateKey); !ok || !k.Equal(wantKey) || !cert.Equal(wantCert) || len(chain) != 1 || chain[0].Subject.CommonName != "events raftka clients CA" {
		t.Fatalf("the key store holds key %T, %s, chain %d", key, cert.Subject, len(chain))
	}
	renewed, _ := IssueClient(ca, "orders-app", now)
	if again, _ := EnsureKeyStore(keyStore, renewed, ca.Cert); bytes.Equal(again.Data, keyStore.Data) || again.Password != keyStore.Password {
		t.Error("a key store of the certificate before is kept, or its password changed")
	}
	if again, _ := EnsureKeyStore(Store{Data: keyStore.Data, Password: "other"}, client, ca.Cert); bytes.Equal(again.Data, keyStore.Data) || again.Password != "other" {
		t.Error("a key store its password does not open is kept")
	}
	other, _ := NewCA("another CA", now)
	if again, _ := EnsureTrustStore(trustStore, other.Cert); bytes.Equal(again.Data, trustStore.Data) {
		t.Error("a trust store of another CA is kept")
	}

	keytool, err := exec.LookPath("keytool")
	if err != nil {
		if os.Getenv("RAFTKA_TEST_DEPS") != "" {
			t.Fatal("make test installed its Debian packages but finds no keytool: apt-get install default-jdk-headless")
		}
		t.Skip("no keytool (make test-deps installs Debian's default-jdk-headless)")
	}
	dir := t.TempDir()
	for name, store := range map[string][]byte{"user.p12": keyStore.Data, "ca.p12": trustStore.Data} {
		if err := os.WriteFile(filepath.Join(dir, name), store, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	list := func(store, password string) (string, error) {
		out, err := exec.Command(keytool, "-list", "-v", "-storetype", "PKCS12", "-keystore", filepath.Join(dir, store), "-storepass", password).CombinedOutput()
		return string(out), err
	}
	if out, err := list("user.p12", keyStore.Password); err != nil || !strings.Contains(out, "PrivateKeyEntry") ||
		!strings.Contains(out, "Certificate chain length: 2") || !strings.Contains(out, "CN=orders-app") {
		t.Errorf("keytool reads the key store as (%v):\n%s", err, out)
	}
	if out, err := list("user.p12", "wrong"); err == nil {
		t.Errorf("keytool opens the key store with another password:\n%s", out)
	}
	if out, err := list("ca.p12", trustStore.Password); err != nil || !strings.Contains(out, "trustedCertEntry") || !strings.Contains(out, "events raftka clients CA") {
		t.Errorf("keytool reads the trust store as (%v):\n%s", err, out)
	}
}
