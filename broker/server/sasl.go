package server

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// SASLConfig configures authentication on SASL_* listeners.
type SASLConfig struct {
	// PlainWithoutTLS offers PLAIN on SASL_PLAINTEXT listeners, where the
	// password crosses the network in the clear; off, PLAIN is refused
	// there.
	PlainWithoutTLS bool
	// AuthenticationTimeout bounds how long a connection to a SASL
	// listener may take to authenticate; it is closed then, so a client
	// that never finishes holds nothing.
	AuthenticationTimeout time.Duration
	// SessionLifetime (Kafka's connections.max.reauth.ms) is how long an
	// authentication holds: a client re-authenticates on the same
	// connection before it ends (KIP-368), or the connection is closed at
	// its next request. 0: sessions never end.
	SessionLifetime time.Duration
}

const (
	mechanismPlain = "PLAIN"
	// Kafka's bounds on SCRAM iterations (ScramMechanism).
	minScramIterations = 4096
	maxScramIterations = 16384
)

// authenticationFailed is the one message a failed authentication gets,
// whichever part was wrong, so that it tells an unknown user from a wrong
// password to no one.
func authenticationFailed(mechanism string) string {
	return "Authentication failed: invalid credentials with SASL mechanism " + mechanism
}

// authenticator checks SASL exchanges against the SCRAM credentials in
// the metadata.
type authenticator struct {
	cfg  SASLConfig
	meta *meta.StateMachine
	// decoyKey derives the salt of a made-up credential for a user that
	// has none, so that an exchange for an unknown user runs as one for a
	// known user with a wrong password and fails at the same step.
	decoyKey []byte
}

func newAuthenticator(cfg SASLConfig, m *meta.StateMachine) *authenticator {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &authenticator{cfg: cfg, meta: m, decoyKey: key}
}

// mechanisms are the SASL mechanisms a listener offers.
func (a *authenticator) mechanisms(l Listener) []string {
	out := []string{meta.ScramSHA256, meta.ScramSHA512}
	if l.Protocol == SASLSSL || a.cfg.PlainWithoutTLS {
		out = append(out, mechanismPlain)
	}
	return out
}

// credential is user's credential for a SCRAM mechanism, or a decoy with
// a salt of its own and no key that any proof matches.
func (a *authenticator) credential(mechanism, user string) (meta.ScramCredential, bool) {
	var cred meta.ScramCredential
	found := false
	a.meta.Read(func(s *meta.State) { cred, found = s.ScramCredential(user, mechanism) })
	if !found {
		return meta.ScramCredential{Salt: hmacOf(sha256.New, a.decoyKey, []byte(mechanism+"\x00"+user))[:20], Iterations: minScramIterations}, false
	}
	return cred, true
}

// checkPlain checks a PLAIN password against the user's SCRAM
// credential, the stronger mechanism's first; against a decoy for a user
// with none, so that an unknown user costs the same key derivation.
func (a *authenticator) checkPlain(user, password string) bool {
	mechanism := meta.ScramSHA512
	stored, found := a.credential(mechanism, user)
	if !found {
		if weaker, ok := a.credential(meta.ScramSHA256, user); ok {
			mechanism, stored, found = meta.ScramSHA256, weaker, true
		}
	}
	return scramPasswordMatches(mechanism, stored, password) && found
}

// newSession starts the authentication of a connection to a SASL
// listener: it has AuthenticationTimeout to finish.
func (a *authenticator) newSession(nc net.Conn) *saslSession {
	if a.cfg.AuthenticationTimeout > 0 {
		_ = nc.SetReadDeadline(time.Now().Add(a.cfg.AuthenticationTimeout))
	}
	return &saslSession{auth: a, nc: nc}
}

// saslSession is one connection's authentication: the mechanism its
// handshake chose, the exchange in progress, and once it succeeded, the
// principal and when the session ends.
type saslSession struct {
	auth      *authenticator
	nc        net.Conn
	mechanism string
	scram     *scramExchange
	principal string
	expires   time.Time
	// raw: a SaslHandshake v0 began the exchange, whose messages come as
	// bare tokens (rawSASLToken).
	raw bool
}

// admits tells whether the connection may send a request of this API:
// before authentication (and after the session ended) only the SASL
// exchange and ApiVersions, as Kafka's brokers allow.
func (s *saslSession) admits(key int16, now time.Time) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	}
	return s.principal != "" && (s.expires.IsZero() || now.Before(s.expires))
}

var errIllegalSASLState = errors.New("no SASL handshake precedes this authentication")

// begin starts an exchange with the mechanism a handshake chose; an
// authenticated connection may start one again to re-authenticate.
func (s *saslSession) begin(mechanism string) error {
	if s.mechanism != "" {
		return fmt.Errorf("a %s exchange is in progress", s.mechanism)
	}
	if h, ok := scramHash(mechanism); ok {
		s.scram = &scramExchange{hash: h, lookup: func(user string) meta.ScramCredential {
			cred, _ := s.auth.credential(mechanism, user)
			return cred
		}}
	}
	s.mechanism = mechanism
	return nil
}

// step takes the client's next SASL message and returns the server's
// answer; done once the exchange succeeded. An error ends the exchange,
// and the connection with it.
func (s *saslSession) step(msg []byte, now time.Time) (answer []byte, done bool, err error) {
	if s.mechanism == "" {
		return nil, false, errIllegalSASLState
	}
	var user string
	if s.mechanism == mechanismPlain {
		var ok bool
		if user, ok = s.plain(msg); !ok {
			return nil, false, errors.New("invalid PLAIN credentials")
		}
	} else {
		out, done, err := s.scram.step(string(msg))
		if err != nil {
			return nil, false, err
		}
		if !done {
			return []byte(out), false, nil
		}
		user, answer = s.scram.user, []byte(out)
	}
	// KIP-368: a re-authentication may not change who the connection is.
	if s.principal != "" && s.principal != user {
		return nil, false, errors.New("re-authentication as another user")
	}
	s.principal, s.mechanism, s.scram = user, "", nil
	if lifetime := s.auth.cfg.SessionLifetime; lifetime > 0 {
		s.expires = now.Add(lifetime)
	}
	if s.auth.cfg.AuthenticationTimeout > 0 {
		_ = s.nc.SetReadDeadline(time.Time{})
	}
	return answer, true, nil
}

// plain reads a PLAIN message (RFC 4616: authzid NUL user NUL password)
// and checks it.
func (s *saslSession) plain(msg []byte) (string, bool) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 {
		return "", false
	}
	user, password := string(parts[1]), string(parts[2])
	if len(parts[0]) > 0 && string(parts[0]) != user {
		return "", false
	}
	return user, s.auth.checkPlain(user, password)
}
