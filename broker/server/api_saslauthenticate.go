package server

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/security"
)

// SaslAuthenticate v0-2: one message of the exchange a SaslHandshake v1
// began (SCRAM takes two, PLAIN one). v1 on answers the session's
// lifetime (--sasl-session-lifetime), within which the client
// re-authenticates (KIP-368). A failure is SASL_AUTHENTICATION_FAILED
// with the same message for an unknown user and a wrong password, and
// the connection is closed.
func init() { register(kmsg.SASLAuthenticate, 0, 2, handleSASLAuthenticate) }

func handleSASLAuthenticate(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	s := r.conn.sasl
	if s == nil || s.Mechanism() == "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.IllegalSaslState.Code, kmsg.StringPtr(security.ErrIllegalSASLState.Error())
		r.closeAfter = true
		return resp, nil
	}
	mechanism := s.Mechanism()
	now := time.Now()
	answer, done, ok := r.conn.saslStep(req.SASLAuthBytes, now)
	if !ok {
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(security.AuthenticationFailed(mechanism))
		r.closeAfter = true
		return resp, nil
	}
	resp.SASLAuthBytes = answer
	if done && !s.Expires().IsZero() {
		resp.SessionLifetimeMillis = s.Expires().Sub(now).Milliseconds()
	}
	return resp, nil
}

// saslStep runs one message of the connection's SASL exchange, counting
// and logging its end; ok false when it failed, and the connection must
// close.
func (c *clientConn) saslStep(msg []byte, now time.Time) (answer []byte, done, ok bool) {
	s := c.sasl
	mechanism, reauthentication := s.Mechanism(), s.Principal() != ""
	answer, done, err := s.Step(msg, now)
	switch {
	case err != nil:
		c.srv.Metrics.Authentication(mechanism, "failure")
		c.srv.Log.Warn("closing connection: SASL authentication failed", "remote", c.nc.RemoteAddr().String(), "mechanism", mechanism,
			"reauthentication", reauthentication, "error", err)
		return nil, false, false
	case done && reauthentication:
		c.srv.Metrics.Authentication(mechanism, "reauthentication")
	case done:
		c.srv.Metrics.Authentication(mechanism, "success")
	}
	return answer, done, true
}

// rawSASLToken handles a frame of a SaslHandshake v0 exchange, which
// carries bare SASL tokens, not Kafka requests, until it ends; the answer
// goes back as a bare token too, in request order. It returns false when
// the connection must close.
func (c *clientConn) rawSASLToken(token []byte) bool {
	answer, _, ok := c.saslStep(token, time.Now())
	if !ok {
		return false
	}
	f := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(answer)), uint32(len(answer)))
	c.out <- ready(append(f, answer...))
	return true
}
