package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake v0-1: a client on a SASL listener names its mechanism;
// after v1 the exchange runs in SaslAuthenticate requests, after v0 in
// bare SASL tokens, one per frame, outside the Kafka protocol
// (rawSASLToken; kafka-python's way). librdkafka only looks for v0 in
// ApiVersions before it uses v1 with SaslAuthenticate. A handshake on a connection that
// authenticated already starts a re-authentication (KIP-368). An unknown
// mechanism, or a handshake on a listener without SASL, is answered and
// the connection closed, as Kafka's brokers do.
func init() { register(kmsg.SASLHandshake, 0, 1, handleSASLHandshake) }

func handleSASLHandshake(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	s := r.conn.sasl
	if s == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		r.closeAfter = true
		return resp, nil
	}
	resp.SupportedMechanisms = srv.Auth.Mechanisms(r.conn.listener.Listener)
	offered := false
	for _, m := range resp.SupportedMechanisms {
		offered = offered || m == req.Mechanism
	}
	if !offered {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		r.closeAfter = true
		return resp, nil
	}
	if err := s.Begin(req.Mechanism, req.GetVersion() == 0); err != nil {
		srv.Log.Warn("closing connection: SASL handshake in the middle of an exchange", "remote", r.conn.nc.RemoteAddr().String(), "error", err)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		r.closeAfter = true
		return resp, nil
	}
	return resp, nil
}
