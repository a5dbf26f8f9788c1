package integration

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestRaftMutualTLS: brokers whose Raft transport is mutual TLS form their
// groups, replicate, and catch a restarted broker up; the transport takes
// a peer with a certificate of the cluster's CA, and refuses one without a
// certificate or with another CA's.
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
}
