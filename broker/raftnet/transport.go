package raftnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/lni/dragonboat/v3/config"
	"github.com/lni/dragonboat/v3/raftio"
	pb "github.com/lni/dragonboat/v3/raftpb"
	"github.com/lni/goutils/stringutil"
)

// Name is the transport's name in Dragonboat's logs.
const Name = "raftka-raftnet"

const (
	dialTimeout      = 5 * time.Second
	handshakeTimeout = 10 * time.Second
	keepAlivePeriod  = 10 * time.Second
)

// Factory makes a NodeHost's transport (config.ExpertConfig.TransportFactory).
type Factory struct {
	// Log receives what a connection's end says about the peer (a bad
	// frame); nil logs nothing.
	Log *slog.Logger
}

var _ config.TransportFactory = Factory{}

// Create returns the transport for a NodeHost; Dragonboat starts it.
func (f Factory) Create(cfg config.NodeHostConfig, onBatch raftio.MessageHandler, onChunk raftio.ChunkHandler) raftio.ITransport {
	log := f.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Transport{cfg: cfg, onBatch: onBatch, onChunk: onChunk, log: log, checked: !cfg.MutualTLS, conns: map[net.Conn]struct{}{}}
}

// Validate accepts the addresses Dragonboat's own transport accepts
// (host:port).
func (Factory) Validate(addr string) bool { return stringutil.IsValidAddress(addr) }

// Transport listens for peers' frames and dials peers to send them.
type Transport struct {
	cfg     config.NodeHostConfig
	onBatch raftio.MessageHandler
	onChunk raftio.ChunkHandler
	log     *slog.Logger
	checked bool // frames carry their payload's CRC: not under TLS

	mu       sync.Mutex
	listener net.Listener
	conns    map[net.Conn]struct{} // accepted, closed by Stop
	stopped  bool
	serving  sync.WaitGroup
}

var _ raftio.ITransport = (*Transport)(nil)

// Name names the transport in Dragonboat's logs.
func (t *Transport) Name() string { return Name }

// Start listens on the NodeHost's listen address.
func (t *Transport) Start() error {
	serverTLS, err := t.cfg.GetServerTLSConfig()
	if err != nil {
		return fmt.Errorf("raftnet: server TLS: %w", err)
	}
	lc := net.ListenConfig{KeepAlive: keepAlivePeriod}
	ln, err := lc.Listen(context.Background(), "tcp", t.cfg.GetListenAddress())
	if err != nil {
		return fmt.Errorf("raftnet: listen: %w", err)
	}
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	t.mu.Lock()
	t.listener = ln
	t.mu.Unlock()
	t.serving.Add(1)
	go t.accept(ln)
	return nil
}

// Stop closes the listener and every accepted connection, and waits for
// their goroutines; connections this side dialed are closed by their users.
func (t *Transport) Stop() {
	t.mu.Lock()
	t.stopped = true
	if t.listener != nil {
		_ = t.listener.Close()
	}
	for c := range t.conns {
		_ = c.Close()
	}
	t.mu.Unlock()
	t.serving.Wait()
}

func (t *Transport) accept(ln net.Listener) {
	defer t.serving.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			t.mu.Lock()
			stopped := t.stopped
			t.mu.Unlock()
			if stopped || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: the listener stays.
			t.log.Warn("raft transport accept failed", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		t.mu.Lock()
		if t.stopped {
			t.mu.Unlock()
			_ = conn.Close()
			return
		}
		t.conns[conn] = struct{}{}
		t.serving.Add(1)
		t.mu.Unlock()
		go t.serve(conn)
	}
}

// serve hands each frame of an accepted connection to Dragonboat until the
// peer closes it, a frame is bad, or the transport stops.
func (t *Transport) serve(conn net.Conn) {
	defer t.serving.Done()
	defer func() {
		t.mu.Lock()
		delete(t.conns, conn)
		t.mu.Unlock()
		_ = conn.Close()
	}()
	if tc, ok := conn.(*tls.Conn); ok {
		// Bounded, so that a peer that never finishes its handshake does
		// not hold the connection.
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			if !errors.Is(err, io.EOF) { // EOF: a peer's liveness probe, which only connects
				t.log.Warn("raft transport TLS handshake failed", "peer", conn.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
	frames := newFrameReader(conn, t.checked)
	for {
		method, payload, err := frames.next()
		switch {
		case errors.Is(err, errPoison):
			_, _ = conn.Write(poison[:]) // the sender waits for it before it closes
			return
		case errors.Is(err, errBadFrame):
			t.log.Warn("raft transport closed a connection on a bad frame", "peer", conn.RemoteAddr().String(), "err", err)
			return
		case err != nil:
			return // closed, reset or stalled mid-frame
		}
		if method == methodMessageBatch {
			var batch pb.MessageBatch
			if err := batch.Unmarshal(payload); err != nil {
				t.log.Warn("raft transport closed a connection on a bad message batch", "peer", conn.RemoteAddr().String(), "err", err)
				return
			}
			t.onBatch(batch)
			continue
		}
		var chunk pb.Chunk
		if err := chunk.Unmarshal(payload); err != nil {
			t.log.Warn("raft transport closed a connection on a bad snapshot chunk", "peer", conn.RemoteAddr().String(), "err", err)
			return
		}
		if !t.onChunk(chunk) {
			return // Dragonboat gave up on this snapshot stream
		}
	}
}

// dial connects to a peer, with TLS when the NodeHost has it.
func (t *Transport) dial(ctx context.Context, target string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlivePeriod}
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, err
	}
	clientTLS, err := t.cfg.GetClientTLSConfig(target)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("raftnet: client TLS for %s: %w", target, err)
	}
	if clientTLS == nil {
		return conn, nil
	}
	tc := tls.Client(conn, clientTLS)
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("raftnet: TLS handshake with %s: %w", target, err)
	}
	return tc, nil
}

// GetConnection dials a peer for Raft message batches.
func (t *Transport) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	conn, err := t.dial(ctx, target)
	if err != nil {
		return nil, err
	}
	return &messageConn{frameWriter: frameWriter{conn: conn, checked: t.checked}}, nil
}

// GetSnapshotConnection dials a peer for one snapshot's chunks.
func (t *Transport) GetSnapshotConnection(ctx context.Context, target string) (raftio.ISnapshotConnection, error) {
	conn, err := t.dial(ctx, target)
	if err != nil {
		return nil, err
	}
	return &chunkConn{frameWriter: frameWriter{conn: conn, checked: t.checked}}, nil
}
