package security

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/benchreport"
)

var report benchreport.Table

func TestMain(m *testing.M) {
	report.SetColumns("in flight", "PLAINTEXT", "SASL_SSL (TLS 1.3, SCRAM-SHA-512)", "SASL_SSL / PLAINTEXT")
	benchreport.Main(m, &report, "security", "Produce over SASL_SSL",
		"3 `raftka-broker` processes on 127.0.0.1 with a PLAINTEXT and a SASL_SSL listener each, package `broker/bench/security`.", notes)
}

const notes = `### Reproduce

` + "```sh\nmake bench\n```" + `

- One topic of 6 partitions, replication factor 3; one franz-go producer per turn, acks=all,
  idempotent, linger 0, 1 KiB incompressible records, compression off, the given number of
  records in flight, for RAFTKA_BENCH_SECURITY_SECONDS (6) after 1 s of warm-up.
- The turns alternate PLAINTEXT and SASL_SSL three times on the same brokers, and each rate
  is the mean of its three turns, so that the machine's drift falls on both alike. The
  brokers replicate over PLAINTEXT in both (brokers do not speak TLS to each other yet), so
  the ratio is the cost on the client's connections: TLS and the authentication at connect.`

// rate produces for d after a warm-up with inFlight records outstanding
// and returns the acknowledged records per second.
func rate(b *testing.B, opts []kgo.Opt, inFlight int, d time.Duration) float64 {
	cl, err := kgo.NewClient(append(opts, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(inFlight))...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 1024)
	if _, err := rand.Read(value); err != nil {
		b.Fatal(err)
	}
	var acked atomic.Int64
	var failed atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cl.Produce(ctx, &kgo.Record{Topic: "bench", Value: value}, func(_ *kgo.Record, err error) {
				if err != nil && ctx.Err() == nil {
					failed.Store(err)
				}
				if err == nil {
					acked.Add(1)
				}
			})
		}
	}()
	time.Sleep(time.Second)
	start, from := time.Now(), acked.Load()
	time.Sleep(d)
	n := acked.Load() - from
	elapsed := time.Since(start)
	cancel()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("produce failed: %v", err)
	}
	return float64(n) / elapsed.Seconds()
}

func BenchmarkProduceOverSASLSSL(b *testing.B) {
	dir := b.TempDir()
	ca := brokertest.NewCA(b)
	cert, key := ca.Issue(b, 2, "broker", false)
	for name, data := range map[string][]byte{"cert.pem": cert, "key.pem": key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	c := brokertest.Start(b, brokertest.Options{Brokers: 3, Listeners: []brokertest.Listener{{Name: "SECURE", Protocol: "SASL_SSL"}},
		ExtraFlags: []string{"--ssl-certificate-file", filepath.Join(dir, "cert.pem"), "--ssl-key-file", filepath.Join(dir, "key.pem")}})
	c.CreateTopic("bench", 6, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if altered, err := c.Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bench", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bench-secret"}}); err != nil || !altered.Ok() {
		b.Fatalf("creating the user: %v %+v", err, altered)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	var secure []string
	for _, br := range c.Brokers {
		secure = append(secure, br.Listeners["SECURE"])
	}
	plaintext := []kgo.Opt{kgo.SeedBrokers(c.AllAddrs()...)}
	sasl := []kgo.Opt{kgo.SeedBrokers(secure...), kgo.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: "bench", Pass: "bench-secret"}.AsSha512Mechanism())}
	d := benchreport.Seconds("RAFTKA_BENCH_SECURITY_SECONDS", 6*time.Second)
	for _, inFlight := range []int{64, 1024} {
		var plain, secured float64
		for turn := 0; turn < 3; turn++ {
			plain += rate(b, plaintext, inFlight, d) / 3
			secured += rate(b, sasl, inFlight, d) / 3
		}
		report.AddRow(fmt.Sprint(inFlight), fmt.Sprintf("%.0f/s", plain), fmt.Sprintf("%.0f/s", secured), fmt.Sprintf("%.2fx", secured/plain))
		b.ReportMetric(secured/plain, fmt.Sprintf("ratio-%d", inFlight))
	}
}
