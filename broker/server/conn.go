package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/quota"
	"github.com/raftka/raftka/broker/security"
)

// maxInFlight bounds the requests a connection may have waiting for their
// turn to be answered.
const maxInFlight = 64

// closingFlushTimeout bounds how long a connection being closed waits for
// its client to take the answers written before.
const closingFlushTimeout = time.Second

// kafkaListener is a bound Kafka listener.
type kafkaListener struct {
	security.Listener
	ln  net.Listener
	tls *tls.Config // SSL and SASL_SSL listeners
	// protected: the inter-broker listener beside client ones, whose
	// connections take no slot of Config.MaxConnections (connlimits.go).
	protected bool
}

type clientConn struct {
	srv      *Server
	listener *kafkaListener
	nc       net.Conn
	out      chan chan reply // responses in request order
	// sasl is the connection's authentication, on a SASL listener; nil
	// on others. Only the read loop touches it.
	sasl *security.Session
	// tlsPrincipal is the subject of the client's verified certificate on
	// an SSL listener (security.Principal), set once the handshake is
	// done.
	tlsPrincipal string
	// remoteHost is the client's address, which ACLs may name.
	remoteHost string
	// active is when a request was last read or an answer written, Unix
	// ns (connlimits.go).
	active atomic.Int64
	// mutedUntil (Unix nanoseconds) holds the next request back while the
	// client pays a quota's throttle time (quotas.go).
	mutedUntil atomic.Int64
	// toldGrowth is, by topic, the ordered growth whose refresh answer
	// this connection's producer got (api_produce.go). Only the read loop
	// touches it.
	toldGrowth map[string]int
}

// reply is a response frame for the writer, nil to close the connection;
// written, if set, is called once the frame went to the socket.
type reply struct {
	frame   []byte
	written func()
}

// Serve accepts connections on every listener until ctx ends.
func (srv *Server) Serve(ctx context.Context) {
	var wg sync.WaitGroup
	for _, l := range srv.listeners {
		wg.Go(func() { srv.accept(ctx, l) })
	}
	wg.Wait()
}

func (srv *Server) accept(ctx context.Context, l *kafkaListener) {
	for {
		if !l.protected && !srv.takeConnSlot(ctx) {
			return
		}
		nc, err := l.ln.Accept()
		if err != nil {
			if !l.protected {
				<-srv.connSlots
			}
			select {
			case <-ctx.Done():
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if l.tls != nil {
			nc = tls.Server(nc, l.tls)
		}
		c := &clientConn{srv: srv, listener: l, nc: nc, out: make(chan chan reply, maxInFlight), remoteHost: remoteHost(nc)}
		if l.Protocol.SASL() {
			c.sasl = srv.Auth.NewSession(nc)
		}
		c.touch()
		srv.conns.Add(2)
		go c.readLoop()
		go c.writeLoop()
	}
}

// writeLoop writes the responses in request order. Responses ready one
// after the other share a flush; before it waits for one not ready yet,
// it flushes those written, so that an answer never waits in the buffer
// for a later request's (a produce pipeline's next commit, a fetch's
// long poll).
func (c *clientConn) writeLoop() {
	defer c.srv.conns.Done()
	if !c.listener.protected {
		defer func() { <-c.srv.connSlots }()
	}
	defer c.nc.Close()
	w := bufio.NewWriterSize(c.nc, 64<<10)
	var unflushed []func()
	flush := func() error {
		if err := w.Flush(); err != nil {
			return err
		}
		for _, f := range unflushed {
			f()
		}
		unflushed = unflushed[:0]
		return nil
	}
	for slot := range c.out {
		var rep reply
		select {
		case rep = <-slot:
		default:
			if err := flush(); err != nil {
				c.drain()
				return
			}
			select {
			case rep = <-slot:
			case <-c.srv.ctx.Done():
				return
			}
		}
		if rep.frame == nil {
			// The reader gave up on this connection: the answers before
			// it go out if the client takes them soon, then it closes.
			_ = c.nc.SetWriteDeadline(time.Now().Add(closingFlushTimeout))
			_ = flush()
			return
		}
		if _, err := w.Write(rep.frame); err != nil {
			c.drain()
			return
		}
		c.touch()
		if rep.written != nil {
			unflushed = append(unflushed, rep.written)
		}
		if len(c.out) == 0 {
			if err := flush(); err != nil {
				c.drain()
				return
			}
		}
	}
	// The connection closes next; a reply it cannot take is lost with it.
	_ = w.Flush()
}

func (c *clientConn) drain() {
	c.nc.Close()
	for range c.out {
	}
}

func (c *clientConn) readLoop() {
	defer c.srv.conns.Done()
	defer close(c.out)
	go func() {
		<-c.srv.ctx.Done()
		c.nc.Close()
	}()
	defer c.closeWhenIdle()()
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshake(tc) {
		return
	}
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	for {
		if !c.waitUnmuted(c.srv.ctx) {
			return
		}
		if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
			return
		}
		arrived := time.Now()
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		raw := c.sasl != nil && c.sasl.Raw()
		if (size < 8 && !raw) || size < 0 || size > c.srv.cfg.MaxRequestBytes {
			c.srv.Log.Warn("closing connection: bad request size", "remote", c.nc.RemoteAddr().String(), "size", size)
			return
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		c.touch()
		if raw {
			if !c.rawSASLToken(body) {
				return
			}
			continue
		}
		if !c.handle(body, arrived) {
			return
		}
	}
}

// handshake runs a TLS handshake within the authentication timeout (a
// SASL listener's session set that deadline already).
func (c *clientConn) handshake(tc *tls.Conn) bool {
	timeout := c.srv.cfg.AuthenticationTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if c.sasl == nil {
		_ = tc.SetReadDeadline(time.Now().Add(timeout))
	}
	ctx, cancel := context.WithTimeout(c.srv.ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.srv.Log.Debug("closing connection: TLS handshake failed", "remote", tc.RemoteAddr().String(), "listener", c.listener.Name, "error", err)
		return false
	}
	if c.sasl == nil {
		_ = tc.SetReadDeadline(time.Time{})
		c.tlsPrincipal = security.Principal(tc.ConnectionState())
		c.srv.Log.Debug("TLS client connected", "remote", tc.RemoteAddr().String(), "listener", c.listener.Name, "principal", c.tlsPrincipal)
	}
	return true
}

// handle decodes and runs one request. It returns false when the
// connection must be closed, which is Kafka's answer to a request that
// cannot be parsed.
func (c *clientConn) handle(body []byte, arrived time.Time) (keep bool) {
	slot := make(chan reply, 1)
	queued := false
	defer func() {
		if p := recover(); p != nil {
			c.srv.Log.Error("request handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			keep = false
			if queued {
				slot <- reply{}
			}
		}
	}()
	parsed, err := parseRequest(body)
	if err != nil {
		var unsupported *unsupportedVersion
		if errors.As(err, &unsupported) && unsupported.key == int16(kmsg.ApiVersions) {
			// KIP-511: answer in v0 with the versions we have.
			resp := apiVersionsResponse(0)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			c.out <- ready(frame(parsed.corr, false, resp))
			return true
		}
		c.srv.Log.Warn("closing connection: bad request", "remote", c.nc.RemoteAddr().String(), "error", err)
		return false
	}
	key, version, corr, kreq, h := parsed.key, parsed.version, parsed.corr, parsed.kreq, handlers[parsed.key]
	clientID := parsed.clientID
	if c.sasl != nil && !c.sasl.Admits(key, time.Now()) {
		// Kafka's brokers too close a connection whose first request is
		// not part of the SASL exchange, or whose session ended.
		c.srv.Log.Warn("closing connection: request without authentication", "remote", c.nc.RemoteAddr().String(), "api", kmsg.NameForKey(key),
			"listener", c.listener.Name, "session_ended", c.sasl.Principal() != "")
		return false
	}
	if !c.admitsAPI(key) {
		c.srv.Log.Info("refused: API needs an operation on the cluster the principal lacks", "remote", c.nc.RemoteAddr().String(),
			"api", kmsg.NameForKey(key), "principal", c.principal())
		h.handle = deniedOnCluster
	}
	req := &request{conn: c, kreq: kreq, clientID: clientID, arrived: arrived}
	start := time.Now()
	// A produce's bytes count against the client's quota as it arrives, a
	// fetch's as its answer leaves.
	use := quotaUse{user: c.quotaUser(), clientID: clientID, exempt: isReplicaFetch(kreq)}
	pr, produce := kreq.(*kmsg.ProduceRequest)
	if produce {
		use.throttle = c.srv.Quotas.Record(quota.ProducerByteRate, use.user, clientID, len(body), start, false)
		c.mute(use.throttle)
	}
	// Produce with acks=0 expects no answer at all.
	if produce && pr.Acks == 0 {
		_, _ = h.handle(c.srv, req)
		return true
	}
	c.out <- slot
	queued = true
	resp, err := h.handle(c.srv, req)
	if err != nil {
		c.srv.Log.Warn("request failed", "api", kmsg.NameForKey(key), "error", err)
		slot <- reply{}
		return false
	}
	flexible := kreq.IsFlexible() && key != int16(kmsg.ApiVersions)
	if req.deferred != nil {
		go func() {
			defer func() {
				if p := recover(); p != nil {
					c.srv.Log.Error("request handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					slot <- reply{} // closes the connection in order
				}
			}()
			resp := req.deferred()
			c.srv.Metrics.Request(key, start)
			resp.SetVersion(version)
			slot <- reply{frame: c.throttled(corr, flexible, resp, use), written: req.written}
		}()
		return true
	}
	c.srv.Metrics.Request(key, start)
	resp.SetVersion(version)
	slot <- reply{frame: c.throttled(corr, flexible, resp, use), written: req.written}
	return !req.closeAfter
}

// throttled frames a response with the throttle time its client must
// pause: a produce's, decided as it arrived, or a fetch's, from the size
// of its answer; the connection takes no request meanwhile. A fetch over
// its quota is answered with no records, which then do not count, as
// Kafka's brokers do, and the client fetches the same offsets again
// after its pause.
func (c *clientConn) throttled(corr int32, flexible bool, resp kmsg.Response, use quotaUse) []byte {
	f := frame(corr, flexible, resp)
	fetched, fetch := resp.(*kmsg.FetchResponse)
	if fetch && !use.exempt {
		use.throttle = c.srv.Quotas.Record(quota.ConsumerByteRate, use.user, use.clientID, len(f), time.Now(), true)
		c.mute(use.throttle)
		if use.throttle > 0 {
			empty := fetched.RequestKind().ResponseKind().(*kmsg.FetchResponse)
			empty.SetVersion(fetched.GetVersion())
			resp = empty
		}
	}
	if use.throttle <= 0 {
		return f
	}
	setThrottle(resp, use.throttle)
	return frame(corr, flexible, resp)
}

func ready(f []byte) chan reply {
	ch := make(chan reply, 1)
	ch <- reply{frame: f}
	return ch
}

// frame encodes a response with its header; ApiVersions always uses header
// v0, whatever its own version.
func frame(corr int32, flexibleHeader bool, resp kmsg.Response) []byte {
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(corr))
	if flexibleHeader {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

type parsedRequest struct {
	key, version int16
	corr         int32
	clientID     string
	kreq         kmsg.Request
}

type unsupportedVersion struct{ key, version int16 }

func (e *unsupportedVersion) Error() string {
	return fmt.Sprintf("%s v%d is not supported", kmsg.NameForKey(e.key), e.version)
}

// parseRequest decodes a request frame (without its size prefix): the
// header by hand, as kmsg has no request-header type, the body with kmsg.
func parseRequest(body []byte) (parsedRequest, error) {
	rd := kbin.Reader{Src: body}
	p := parsedRequest{key: rd.Int16(), version: rd.Int16(), corr: rd.Int32()}
	if rd.Complete() != nil {
		return p, errors.New("short request header")
	}
	h, known := handlers[p.key]
	if !known {
		return p, fmt.Errorf("unsupported API key %d", p.key)
	}
	if p.version < h.min || p.version > h.max {
		return p, &unsupportedVersion{p.key, p.version}
	}
	p.kreq = kmsg.RequestForKey(p.key)
	p.kreq.SetVersion(p.version)
	if id := rd.NullableString(); id != nil {
		p.clientID = *id
	}
	if p.kreq.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if rd.Complete() != nil {
		return p, errors.New("short request header")
	}
	if err := p.kreq.ReadFrom(rd.Src); err != nil {
		return p, fmt.Errorf("malformed %s v%d: %w", kmsg.NameForKey(p.key), p.version, err)
	}
	return p, nil
}
