package integration

import (
	"context"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/xdg-go/scram"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/certs"
)

// securedCluster runs brokers with a SASL_SSL listener (SECURE) and an SSL
// listener that requires client certificates (MTLS), their certificates
// from ca, and the user alice; dir holds ca.pem and carol's client
// certificate and key. extraFlags go to every broker.
func securedCluster(t *testing.T, extraFlags ...string) (c *brokertest.Cluster, ca *brokertest.CA, dir string) {
	dir = t.TempDir()
	ca = brokertest.NewCA(t)
	serverCert, serverKey := ca.Issue(t, 10, "broker", false)
	clientCert, clientKey := ca.Issue(t, 20, "carol", true)
	for name, data := range map[string][]byte{"ca.pem": ca.PEM, "server.pem": serverCert, "server-key.pem": serverKey, "client.pem": clientCert, "client-key.pem": clientKey} {
		writeAtomically(t, filepath.Join(dir, name), data)
	}
	c = brokertest.Start(t, brokertest.Options{Brokers: 3,
		Listeners: []brokertest.Listener{{Name: "SECURE", Protocol: "SASL_SSL"}, {Name: "MTLS", Protocol: "SSL"}},
		ExtraFlags: append([]string{"--ssl-certificate-file", filepath.Join(dir, "server.pem"), "--ssl-key-file", filepath.Join(dir, "server-key.pem"),
			"--ssl-ca-file", filepath.Join(dir, "ca.pem"), "--ssl-client-auth", "required"}, extraFlags...)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if altered, err := c.Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}}); err != nil || !altered.Ok() {
		t.Fatalf("creating alice: %v %+v", err, altered)
	}
	return c, ca, dir
}

func listenerAddrs(c *brokertest.Cluster, listener string) []string {
	var out []string
	for _, b := range c.Brokers {
		out = append(out, b.Listeners[listener])
	}
	return out
}

// saramaSCRAM is sarama's SCRAM client, which sarama leaves to its users:
// xdg-go/scram's, as sarama's own examples have it.
type saramaSCRAM struct {
	*scram.ClientConversation
}

func (s *saramaSCRAM) Begin(user, password, authzID string) error {
	client, err := scram.HashGeneratorFcn(sha512.New).NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.ClientConversation = client.NewConversation()
	return nil
}

// TestSaramaOverSASLSSLAndMTLS: IBM/sarama produces idempotently over
// SASL_SSL with SCRAM-SHA-512, and consumes over an SSL listener with a
// client certificate; a wrong password is refused.
func TestSaramaOverSASLSSLAndMTLS(t *testing.T) {
	c, ca, dir := securedCluster(t)
	c.CreateTopic("sarama-secured", 1, 3, nil)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	scramConfig := func(password string) *sarama.Config {
		cfg := saramaConfig()
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", password
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{} }
		return cfg
	}
	producer, err := sarama.NewSyncProducer(listenerAddrs(c, "SECURE"), scramConfig("alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := 0; i < n; i++ {
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "sarama-secured", Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatalf("record %d over SASL_SSL: %v", i, err)
		}
	}
	_ = producer.Close()
	if _, err := sarama.NewSyncProducer(listenerAddrs(c, "SECURE"), scramConfig("guess")); err == nil {
		t.Error("sarama with a wrong password got a producer")
	}

	carol, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := saramaConfig()
	cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{carol}, MinVersion: tls.VersionTLS12}
	consumer, err := sarama.NewConsumer(listenerAddrs(c, "MTLS"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = consumer.Close() }()
	pc, err := consumer.ConsumePartition("sarama-secured", 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Close() }()
	timeout := time.After(30 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case m := <-pc.Messages():
			if string(m.Value) != fmt.Sprint(i) || m.Offset != int64(i) {
				t.Fatalf("over mTLS, record %d: %q at offset %d", i, m.Value, m.Offset)
			}
		case <-timeout:
			t.Fatalf("over mTLS, read %d of %d records", i, n)
		}
	}
}

// TestConfluentKafkaOverMTLSWithPKCS12Stores: librdkafka's round trip
// over the SSL listener that requires client certificates, with nothing
// but the PKCS#12 files the operator writes into a tls User's Secret
// (user.p12) and the cluster CA's Secret (ca.p12), opened by their
// passwords, as clients without PEM files are configured.
func TestConfluentKafkaOverMTLSWithPKCS12Stores(t *testing.T) {
	clientDir := confluentKafkaDir(t)
	c, ca, dir := securedCluster(t)
	var carol certs.Pair
	for path, into := range map[string]*[]byte{"client.pem": &carol.Cert, "client-key.pem": &carol.Key} {
		data, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		*into = data
	}
	keyStore, err := certs.EnsureKeyStore(certs.Store{}, carol, ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	trustStore, err := certs.EnsureTrustStore(certs.Store{}, ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomically(t, filepath.Join(dir, "user.p12"), keyStore.Data)
	writeAtomically(t, filepath.Join(dir, "ca.p12"), trustStore.Data)
	props := strings.Join([]string{
		"security.protocol=SSL",
		"ssl.keystore.location=" + filepath.Join(dir, "user.p12"),
		"ssl.keystore.password=" + keyStore.Password,
		"ssl.truststore.location=" + filepath.Join(dir, "ca.p12"),
		"ssl.truststore.password=" + trustStore.Password,
	}, "\n")
	run := runClientWith(t, listenerAddrs(c, "MTLS"), []string{"KAFKA_PROPERTIES=" + props}, "confluent-mtls", clientDir, debianPython, "client.py")
	run.check(t, clientRecords)
}

// TestConfluentKafkaOverSASLSSL: librdkafka's round trip (admin,
// idempotent producer, consumer group) over SASL_SSL with SCRAM-SHA-512,
// the CA's PEM its trust, configured as any librdkafka user would.
func TestConfluentKafkaOverSASLSSL(t *testing.T) {
	clientDir := confluentKafkaDir(t)
	c, _, dir := securedCluster(t)
	props := strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512",
		"sasl.username=alice",
		"sasl.password=alice-secret",
		"ssl.ca.location=" + filepath.Join(dir, "ca.pem"),
	}, "\n")
	run := runClientWith(t, listenerAddrs(c, "SECURE"), []string{"KAFKA_PROPERTIES=" + props}, "confluent-sasl", clientDir, debianPython, "client.py")
	run.check(t, clientRecords)
	authenticated := 0.0
	for i := range c.Brokers {
		v, _ := c.Metric(i, "raftka_sasl_authentications_total", `mechanism="SCRAM-SHA-512"`, `result="success"`)
		authenticated += v
	}
	if authenticated == 0 {
		t.Error("no SCRAM-SHA-512 authentication counted: librdkafka did not authenticate")
	}
}
