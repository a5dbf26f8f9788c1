package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/security"
)

// PeerHTTP is how brokers reach each other's HTTP endpoint, and which of
// its endpoints only a broker may call.
//
// With the Raft transport's mutual TLS (Config.RaftTLS) the brokers hold
// certificates of the cluster's Raft CA, and the HTTP endpoint is the
// other door into the cluster: POST /internal/join removes a broker's
// older incarnations from the metadata group and adds the caller's node,
// and GET /internal/replica feeds a forced recovery's choice of the
// replica that keeps its data. Both then serve only a caller that shows a
// Raft certificate over TLS, and brokers call each other over HTTPS with
// theirs, checking the peer's against the Raft CA. The port speaks HTTPS
// and plain HTTP at once: the kubelet's probes, Prometheus, the operator
// and the raftka command read /readyz, /metrics, /safe-to-restart and
// /internal/identity as before, which change nothing.
//
// Without RaftTLS the Raft port itself takes any peer, so the internal
// endpoints are as open as it is, over plain HTTP.
type PeerHTTP struct {
	// files are the Raft certificate, key and CA; nil without RaftTLS.
	files *security.Files
}

// peerHandshakeTimeout bounds how long a connection to the HTTP endpoint
// may take to send its first byte, which tells TLS from plain HTTP.
const peerHandshakeTimeout = 5 * time.Second

func NewPeerHTTP(raft *security.RaftTLS, log *slog.Logger) (*PeerHTTP, error) {
	if raft == nil {
		return &PeerHTTP{}, nil
	}
	files, err := security.NewFiles(security.TLSConfig{CertFile: raft.CertFile, KeyFile: raft.KeyFile, CAFile: raft.CAFile, ClientAuth: "requested"}, log)
	if err != nil {
		return nil, err
	}
	return &PeerHTTP{files: files}, nil
}

// URL is a peer's endpoint at addr (host:port).
func (p *PeerHTTP) URL(addr, path string, query url.Values) string {
	u := url.URL{Scheme: "http", Host: addr, Path: path, RawQuery: query.Encode()}
	if p.files != nil {
		u.Scheme = "https"
	}
	return u.String()
}

// Client calls peers: over HTTPS with this broker's Raft certificate, and
// trusting only the Raft CA, when the brokers have one.
func (p *PeerHTTP) Client(timeout time.Duration) *http.Client {
	if p.files == nil {
		return &http.Client{Timeout: timeout}
	}
	cert, roots := p.files.Current()
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}, RootCAs: roots},
		DisableKeepAlives: true,
	}
	return &http.Client{Timeout: timeout, Transport: transport}
}

// RaftClientTLS is the TLS configuration of a connection to a peer's Raft
// transport at addr, as Dragonboat's own connections make it; nil without
// RaftTLS.
func (p *PeerHTTP) RaftClientTLS(addr string) *tls.Config {
	if p.files == nil {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cert, roots := p.files.Current()
	return &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host, Certificates: []tls.Certificate{*cert}, RootCAs: roots}
}

// OnlyPeers serves h to a caller that showed a Raft certificate, with
// RaftTLS; anyone else is refused with 403.
func (p *PeerHTTP) OnlyPeers(h http.Handler) http.Handler {
	if p.files == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "only a broker of this cluster may call this: connect over TLS with a certificate of its Raft CA", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Listen serves HTTPS and plain HTTP on ln, with RaftTLS; ln as it is
// without.
func (p *PeerHTTP) Listen(ln net.Listener) net.Listener {
	if p.files == nil {
		return ln
	}
	config := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, cas := p.files.Current()
			// A certificate is verified when given (for client
			// authentication, which a listener certificate of the
			// same CA lacks) and not asked for: the probes have none.
			return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert},
				ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: cas}, nil
		},
	}
	return newTLSOrPlainListener(ln, config)
}

// tlsOrPlainListener hands out each connection of its listener as TLS
// when its first byte opens a TLS handshake, and as it is otherwise. The
// first byte is awaited off the accepting goroutine, so a client that
// sends nothing holds up no other.
type tlsOrPlainListener struct {
	net.Listener
	config   *tls.Config
	accepted chan net.Conn
	failed   chan error
	closed   chan struct{}
	close    sync.Once
}

func newTLSOrPlainListener(ln net.Listener, config *tls.Config) *tlsOrPlainListener {
	l := &tlsOrPlainListener{Listener: ln, config: config, accepted: make(chan net.Conn), failed: make(chan error, 1), closed: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *tlsOrPlainListener) acceptLoop() {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.failed <- err
			return
		}
		go l.sort(conn)
	}
}

// sort reads the connection's first byte: 0x16 is a TLS handshake record.
func (l *tlsOrPlainListener) sort(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(peerHandshakeTimeout))
	r := bufio.NewReader(conn)
	first, err := r.Peek(1)
	if err != nil {
		_ = conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var sorted net.Conn = &peekedConn{Conn: conn, r: r}
	if first[0] == 0x16 {
		sorted = tls.Server(sorted, l.config)
	}
	select {
	case l.accepted <- sorted:
	case <-l.closed:
		_ = conn.Close()
	}
}

func (l *tlsOrPlainListener) Accept() (net.Conn, error) {
	select {
	case conn := <-l.accepted:
		return conn, nil
	case err := <-l.failed:
		l.failed <- err
		return nil, err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *tlsOrPlainListener) Close() error {
	l.close.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// peekedConn reads through the reader that peeked at its first byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// GetJSON GETs a peer's JSON answer into out.
func GetJSON(ctx context.Context, client *http.Client, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
