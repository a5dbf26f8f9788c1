package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestRaftMutualTLS: brokers whose Raft transport is mutual TLS form their
// groups, replicate, and catch a restarted broker up; the transport takes
// a peer with a certificate of the cluster's CA, and refuses one without a
// certificate or with another CA's. The HTTP endpoint's join, which
// changes the metadata group's membership, refuses a caller without such
// a certificate, and a broker that lost its disk joins again through it.
func TestRaftMutualTLS(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, RaftTLS: true})
	c.CreateTopic("tls-raft", 1, 3, nil)
	produceN(t, c, "tls-raft", 30)
	c.Kill(1)
	produceN(t, c, "tls-raft", 30)
	c.Restart(1)
	c.WaitReady(1)
	waitFor(t, 30*time.Second, "the restarted broker to catch up over TLS", func() bool {
		hw, ok := c.Metric(1, "raftka_partition_high_watermark", `topic="tls-raft"`)
		return ok && hw == 60
	})
	if got := consumeAll(t, c, "tls-raft", 60); len(got) != 60 {
		t.Fatalf("read %d records, want 60", len(got))
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.RaftCA.PEM)
	// refused tells whether the broker's Raft transport drops a TLS client:
	// the handshake fails, or the connection is closed right after it (TLS
	// 1.3 sends the server's verdict on the client's certificate then).
	refused := func(cfg *tls.Config) bool {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", c.Brokers[0].RaftAddr, cfg)
		if err != nil {
			return true
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, err = conn.Read(make([]byte, 1))
		var ne net.Error
		return !errors.As(err, &ne) || !ne.Timeout()
	}
	peerCert, peerKey := c.RaftCA.IssuePeer(t, 3, "another broker")
	peer, err := tls.X509KeyPair(peerCert, peerKey)
	if err != nil {
		t.Fatal(err)
	}
	if refused(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{peer}}) {
		t.Fatal("the Raft transport refused a peer with a certificate of the cluster's CA")
	}
	if !refused(&tls.Config{RootCAs: roots}) {
		t.Error("the Raft transport took a client without a certificate")
	}
	stranger := brokertest.NewCA(t)
	strangerCert, strangerKey := stranger.IssuePeer(t, 4, "impostor")
	impostor, err := tls.X509KeyPair(strangerCert, strangerKey)
	if err != nil {
		t.Fatal(err)
	}
	if !refused(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{impostor}}) {
		t.Error("the Raft transport took a certificate another CA signed")
	}

	// A forged join for broker 2 would replace its node in the metadata
	// group by one at the caller's address.
	forged := `{"broker": {"ID": 2, "Host": "127.0.0.1", "Port": 1, "RaftAddr": "127.0.0.1:1", "Incarnation": "forged"}}`
	for scheme, client := range map[string]*http.Client{
		"http":  {Timeout: 20 * time.Second},
		"https": {Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}},
	} {
		resp, err := client.Post(scheme+"://"+c.Brokers[0].HTTPAddr+"/internal/join", "application/json", strings.NewReader(forged))
		if err != nil {
			t.Fatalf("join over %s: %v", scheme, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a join over %s without a Raft certificate: %s, want 403", scheme, resp.Status)
		}
	}
	if inc, gen := recordedIncarnation(t, c, 2); inc == "forged" || gen != 0 {
		t.Fatalf("the metadata records broker 2 as incarnation %q of generation %d after a forged join", inc, gen)
	}

	// A broker that lost its disk asks the others, over HTTPS with its
	// Raft certificate, whether the cluster exists and to join it.
	c.Kill(2)
	c.LoseDisk(2)
	c.Restart(2)
	c.WaitReady(2)
	if _, gen := recordedIncarnation(t, c, 2); gen != 1 {
		t.Errorf("the broker that lost its disk is generation %d, want 1", gen)
	}
	waitFor(t, 60*time.Second, "the new incarnation to catch up over TLS", func() bool {
		hw, ok := c.Metric(2, "raftka_partition_high_watermark", `topic="tls-raft"`)
		return ok && hw == 60
	})
}

// recordedIncarnation is broker id's incarnation and generation as broker
// 0's metadata records them, asked over plain HTTP as the operator asks.
func recordedIncarnation(t *testing.T, c *brokertest.Cluster, id int) (string, uint32) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/internal/identity?broker=%d", c.Brokers[0].HTTPAddr, id))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var answer struct {
		Asked *struct {
			Incarnation string
			Generation  uint32
		} `json:"asked"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.Asked == nil {
		t.Fatalf("identity of broker %d: %v %+v", id, err, answer)
	}
	return answer.Asked.Incarnation, answer.Asked.Generation
}

// TestMovingToTLSLosesNothing: a cluster whose brokers spoke Raft and
// fetched from each other without TLS is stopped whole and started again
// on the same data with the Raft transport over mutual TLS and the
// inter-broker listener over SASL_SSL, as the operator moves a cluster
// created before either: every acknowledged record (once) and committed
// offset is there afterwards, the Raft port speaks TLS, and a broker that
// lost its disk joins and catches up over TLS.
func TestMovingToTLSLosesNothing(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, InterBrokerUser: &brokertest.User{Name: "raftka-broker", Password: "inter-broker-secret"}})
	c.CreateTopic("moving", 3, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	acks := brokertest.NewLedger()
	produceAcked(ctx, t, c, acks, "moving", "plain", 1500)
	committed := kadm.Offsets{}
	committed.Add(kadm.Offset{Topic: "moving", Partition: 1, At: 321, LeaderEpoch: -1})
	if resp, err := c.Admin().CommitOffsets(ctx, "mover", committed); err != nil || resp.Error() != nil {
		t.Fatalf("commit offsets: %v %v", err, resp.Error())
	}

	c.MoveToTLS()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.RaftCA.PEM)
	peerCert, peerKey := c.RaftCA.IssuePeer(t, 3, "another broker")
	peer, err := tls.X509KeyPair(peerCert, peerKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range c.Brokers {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", b.RaftAddr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{peer}})
		if err != nil {
			t.Fatalf("broker %d's Raft port after the move: no TLS handshake: %v", i, err)
		}
		_ = conn.Close()
	}
	produceAcked(ctx, t, c, acks, "moving", "tls", 1500)
	fetched, err := c.Admin().FetchOffsets(ctx, "mover")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("moving", 1); !ok || o.At != 321 {
		t.Errorf("the group's committed offset after the move: %+v (%v), want 321", o, ok)
	}

	// A lost disk after the move: the broker joins over HTTPS and catches
	// up over the SASL_SSL listener.
	c.Kill(2)
	c.LoseDisk(2)
	c.Restart(2)
	c.WaitReady(2)
	waitFullyReplicated(t, c, "moving", 2)
	acks.VerifyExactlyOnce(t, "moving", c.Client)
}
