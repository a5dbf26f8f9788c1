package cluster_test

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/lni/dragonboat/v3"
	dbconfig "github.com/lni/dragonboat/v3/config"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/broker/cluster"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/security"
)

// brokers is a fixed registry.
type brokers []meta.Broker

func (b brokers) Brokers() []meta.Broker { return b }

// freeAddr is a 127.0.0.1 address nothing listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startNodeHost runs a Dragonboat node host, the Raft transport a probe
// asks, at a free address.
func startNodeHost(t *testing.T, tlsFiles *security.RaftTLS) string {
	addr := freeAddr(t)
	cfg := dbconfig.NodeHostConfig{NodeHostDir: t.TempDir(), RTTMillisecond: 100, RaftAddress: addr}
	if tlsFiles != nil {
		cfg.MutualTLS, cfg.CAFile, cfg.CertFile, cfg.KeyFile = true, tlsFiles.CAFile, tlsFiles.CertFile, tlsFiles.KeyFile
	}
	nh, err := dragonboat.NewNodeHost(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nh.Stop)
	return addr
}

// TestLivenessProbeAsksTheRaftTransport: a probe counts a broker whose
// Raft transport answers, and not one whose port takes connections
// without an answer (a paused process: the kernel accepts for it), nor a
// closed port. Over mutual TLS, the probe shows the Raft certificate.
func TestLivenessProbeAsksTheRaftTransport(t *testing.T) {
	paused, err := net.Listen("tcp", "127.0.0.1:0") // never accepted
	if err != nil {
		t.Fatal(err)
	}
	defer paused.Close()
	plain := brokers{
		{ID: 1, RaftAddr: startNodeHost(t, nil)},
		{ID: 2, RaftAddr: paused.Addr().String()},
		{ID: 3, RaftAddr: freeAddr(t)},
	}
	l := cluster.NewLiveness(0, plain, nil)
	for _, c := range []struct {
		broker meta.Broker
		live   bool
	}{{plain[0], true}, {plain[1], false}, {plain[2], false}} {
		if got := l.Probe(c.broker); got != c.live {
			t.Errorf("probe of broker %d at %s answered %v, want %v", c.broker.ID, c.broker.RaftAddr, got, c.live)
		}
		if l.IsLive(c.broker.ID) != c.live || l.Unreachable(c.broker.ID) == c.live {
			t.Errorf("broker %d: IsLive %v, Unreachable %v after a probe that answered %v", c.broker.ID, l.IsLive(c.broker.ID), l.Unreachable(c.broker.ID), c.live)
		}
	}

	ca := brokertest.NewCA(t)
	cert, key := ca.IssuePeer(t, 2, "broker")
	dir := t.TempDir()
	files := &security.RaftTLS{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	for path, pem := range map[string][]byte{files.CAFile: ca.PEM, files.CertFile: cert, files.KeyFile: key} {
		if err := os.WriteFile(path, pem, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	peers, err := cluster.NewPeerHTTP(files, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	secure := meta.Broker{ID: 1, RaftAddr: startNodeHost(t, files)}
	if !cluster.NewLiveness(0, brokers{secure}, peers.RaftClientTLS).Probe(secure) {
		t.Error("a probe with the Raft certificate got no answer from a mutual TLS transport")
	}
	if cluster.NewLiveness(0, brokers{secure}, nil).Probe(secure) {
		t.Error("a mutual TLS transport answered a probe without a certificate")
	}
}
