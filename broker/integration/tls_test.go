package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/raftka/raftka/broker/brokertest"
)

// writeAtomically replaces a file as Kubernetes updates a mounted Secret:
// the new content appears whole.
func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestTLSListeners: an SSL listener that requires client certificates
// (mTLS) and a SASL_SSL listener with SCRAM and PLAIN serve franz-go and
// kcat; a client without a certificate is refused; a certificate
// rotated on disk is served to new connections without a restart.
func TestTLSListeners(t *testing.T) {
	dir := t.TempDir()
	ca := brokertest.NewCA(t)
	serverCert, serverKey := ca.Issue(t, 10, "broker", false)
	clientCert, clientKey := ca.Issue(t, 20, "carol", true)
	files := map[string][]byte{"ca.pem": ca.PEM, "server.pem": serverCert, "server-key.pem": serverKey, "client.pem": clientCert, "client-key.pem": clientKey}
	for name, data := range files {
		writeAtomically(t, filepath.Join(dir, name), data)
	}
	// PUBLIC serves a certificate of its own, from a directory laid out as
	// a mounted kubernetes.io/tls Secret, signed by another CA (a public
	// one, say, where the internal listeners use the cluster's).
	publicDir := filepath.Join(dir, "public")
	publicCA := brokertest.NewCA(t)
	publicCert, publicKey := publicCA.Issue(t, 30, "public", false)
	if err := os.Mkdir(publicDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeAtomically(t, filepath.Join(publicDir, "tls.crt"), publicCert)
	writeAtomically(t, filepath.Join(publicDir, "tls.key"), publicKey)
	c := brokertest.Start(t, brokertest.Options{Brokers: 3,
		Listeners: []brokertest.Listener{{Name: "MTLS", Protocol: "SSL"}, {Name: "SECURE", Protocol: "SASL_SSL"}, {Name: "PUBLIC", Protocol: "SASL_SSL"}},
		ExtraFlags: []string{"--ssl-certificate-file", filepath.Join(dir, "server.pem"), "--ssl-key-file", filepath.Join(dir, "server-key.pem"),
			"--ssl-ca-file", filepath.Join(dir, "ca.pem"), "--ssl-client-auth", "required", "--listener-ssl-dirs", "PUBLIC=" + publicDir}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.CreateTopic("encrypted", 3, 3, nil)
	if altered, err := c.Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}}); err != nil || !altered.Ok() {
		t.Fatalf("creating alice: %v %+v", err, altered)
	}
	addrs := func(listener string) []string {
		var out []string
		for _, b := range c.Brokers {
			out = append(out, b.Listeners[listener])
		}
		return out
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	carol, err := tls.X509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	client := func(listener string, cfg *tls.Config, mechanism sasl.Mechanism) (*kgo.Client, error) {
		opts := []kgo.Opt{kgo.SeedBrokers(addrs(listener)...), kgo.DialTLSConfig(cfg), kgo.RequestRetries(0)}
		if mechanism != nil {
			opts = append(opts, kgo.SASL(mechanism))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		// Every broker the client learns of is dialled through the
		// listener's advertised addresses: a PLAINTEXT address fails TLS.
		if _, err := kadm.NewClient(cl).BrokerMetadata(ctx); err != nil {
			return nil, err
		}
		return cl, cl.ProduceSync(ctx, &kgo.Record{Topic: "encrypted", Value: []byte("from " + listener)}).FirstErr()
	}

	if _, err := client("MTLS", &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{carol}}, nil); err != nil {
		t.Fatalf("mTLS with carol's certificate: %v", err)
	}
	if _, err := client("MTLS", &tls.Config{RootCAs: roots}, nil); err == nil {
		t.Error("a client without a certificate got through an SSL listener that requires one")
	}
	if _, err := client("SECURE", &tls.Config{RootCAs: roots}, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("SCRAM-SHA-512 over SASL_SSL: %v", err)
	}
	if _, err := client("SECURE", &tls.Config{RootCAs: roots}, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); err != nil {
		t.Fatalf("PLAIN over SASL_SSL: %v", err)
	}
	if _, err := client("SECURE", &tls.Config{RootCAs: roots}, plain.Auth{User: "alice", Pass: "guess"}.AsMechanism()); err == nil {
		t.Error("PLAIN with a wrong password got through")
	}
	publicRoots := x509.NewCertPool()
	publicRoots.AppendCertsFromPEM(publicCA.PEM)
	if _, err := client("PUBLIC", &tls.Config{RootCAs: publicRoots}, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("SCRAM-SHA-512 over the listener with its own certificate: %v", err)
	}
	for _, listener := range []string{"PUBLIC", "SECURE"} {
		other := map[string]*x509.CertPool{"PUBLIC": roots, "SECURE": publicRoots}[listener]
		if conn, err := tls.Dial("tcp", c.Brokers[0].Listeners[listener], &tls.Config{RootCAs: other}); err == nil {
			_ = conn.Close()
			t.Errorf("listener %s served a certificate of the other listener's CA", listener)
		}
	}

	// kcat (librdkafka, OpenSSL) over both.
	kcatSASL := []string{"-b", strings.Join(addrs("SECURE"), ","), "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + filepath.Join(dir, "ca.pem"),
		"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
	kcat(t, "kcat-sasl-ssl\n", append(kcatSASL, "-P", "-t", "encrypted", "-p", "1")...)
	kcatMTLS := []string{"-b", strings.Join(addrs("MTLS"), ","), "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + filepath.Join(dir, "ca.pem"),
		"-X", "ssl.certificate.location=" + filepath.Join(dir, "client.pem"), "-X", "ssl.key.location=" + filepath.Join(dir, "client-key.pem")}
	got := kcat(t, "", append(kcatMTLS, "-C", "-t", "encrypted", "-o", "beginning", "-e", "-q", "-f", "%s\n")...)
	for _, want := range []string{"from MTLS", "from SECURE", "kcat-sasl-ssl"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("kcat over mTLS read no %q in %q", want, got)
		}
	}

	// Rotation: new files, same paths; new connections get the new
	// certificate, with no restart.
	rotated, rotatedKey := ca.Issue(t, 99, "broker", false)
	writeAtomically(t, filepath.Join(dir, "server-key.pem"), rotatedKey)
	writeAtomically(t, filepath.Join(dir, "server.pem"), rotated)
	deadline := time.Now().Add(15 * time.Second)
	for {
		conn, err := tls.Dial("tcp", c.Brokers[0].Listeners["MTLS"], &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{carol}})
		serial := ""
		if err == nil {
			serial = conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
			_ = conn.Close()
		}
		if serial == "99" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("15 s after the rotation, the broker serves serial %q (%v), want 99", serial, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := client("MTLS", &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{carol}}, nil); err != nil {
		t.Fatalf("mTLS after the rotation: %v", err)
	}
}
