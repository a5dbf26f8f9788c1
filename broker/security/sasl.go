package security

import (
	"bytes"
	"context"
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
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// AuthenticationFailed is the one message a failed authentication gets,
// whichever part was wrong, so that it tells an unknown user from a wrong
// password to no one.
func AuthenticationFailed(mechanism string) string {
	return "Authentication failed: invalid credentials with SASL mechanism " + mechanism
}

// Credentials is where SCRAM credentials are found: the metadata.
type Credentials interface {
	ScramCredential(user, mechanism string) (meta.ScramCredential, bool)
}

// Authenticator checks SASL exchanges against the SCRAM credentials in
// the metadata.
type Authenticator struct {
	cfg   SASLConfig
	creds Credentials
	// catchUp waits until this broker's metadata has applied what the
	// metadata group committed before the call; nil where the
	// credentials are not replicated (tests).
	catchUp func(context.Context) error
	// decoyKey derives the salt of a made-up credential for a user that
	// has none, so that an exchange for an unknown user runs as one for a
	// known user with a wrong password and fails at the same step.
	decoyKey []byte
}

// NewAuthenticator checks exchanges with cfg against creds, after
// catchUp (nil for none) brought them up to date.
func NewAuthenticator(cfg SASLConfig, creds Credentials, catchUp func(context.Context) error) *Authenticator {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &Authenticator{cfg: cfg, creds: creds, catchUp: catchUp, decoyKey: key}
}

// catchUpWait bounds how long an exchange waits for the metadata to catch
// up: without a metadata quorum it goes on with what this broker has.
const catchUpWait = 2 * time.Second

// catchUpCredentials brings this broker's credentials up to what the
// metadata group acknowledged before the exchange began: a user created
// (or a password changed) through any broker can log in at once through
// every broker, as a client that creates a user and then connects
// expects. Every exchange waits alike, known user or not, so the wait
// tells no one which users exist.
func (a *Authenticator) catchUpCredentials() {
	if a.catchUp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), catchUpWait)
	defer cancel()
	_ = a.catchUp(ctx)
}

// Mechanisms are the SASL mechanisms a listener offers.
func (a *Authenticator) Mechanisms(l Listener) []string {
	out := []string{meta.ScramSHA256, meta.ScramSHA512}
	if l.Protocol == SASLSSL || a.cfg.PlainWithoutTLS {
		out = append(out, mechanismPlain)
	}
	return out
}

// credential is user's credential for a SCRAM mechanism, or a decoy with
// a salt of its own and no key that any proof matches.
func (a *Authenticator) credential(mechanism, user string) (meta.ScramCredential, bool) {
	cred, found := a.creds.ScramCredential(user, mechanism)
	if !found {
		return meta.ScramCredential{Salt: hmacOf(sha256.New, a.decoyKey, []byte(mechanism+"\x00"+user))[:20], Iterations: MinScramIterations}, false
	}
	return cred, true
}

// checkPlain checks a PLAIN password against the user's SCRAM
// credential, the stronger mechanism's first; against a decoy for a user
// with none, so that an unknown user costs the same key derivation.
func (a *Authenticator) checkPlain(user, password string) bool {
	mechanism := meta.ScramSHA512
	stored, found := a.credential(mechanism, user)
	if !found {
		if weaker, ok := a.credential(meta.ScramSHA256, user); ok {
			mechanism, stored, found = meta.ScramSHA256, weaker, true
		}
	}
	return ScramPasswordMatches(mechanism, stored, password) && found
}

// NewSession starts the authentication of a connection to a SASL
// listener: it has AuthenticationTimeout to finish.
func (a *Authenticator) NewSession(nc net.Conn) *Session {
	if a.cfg.AuthenticationTimeout > 0 {
		_ = nc.SetReadDeadline(time.Now().Add(a.cfg.AuthenticationTimeout))
	}
	return &Session{auth: a, nc: nc}
}

// Session is one connection's authentication: the mechanism its
// handshake chose, the exchange in progress, and once it succeeded, the
// principal and when the session ends.
type Session struct {
	auth      *Authenticator
	nc        net.Conn
	mechanism string
	scram     *scramExchange
	principal string
	expires   time.Time
	// raw: a SaslHandshake v0 began the exchange, whose messages come as
	// bare tokens, not Kafka requests, until it ends.
	raw bool
}

// Mechanism is the mechanism of the exchange in progress, or "".
func (s *Session) Mechanism() string { return s.mechanism }

// Principal is the user the connection authenticated as, or "".
func (s *Session) Principal() string { return s.principal }

// Expires is when the session ends; zero if never.
func (s *Session) Expires() time.Time { return s.expires }

// Raw tells whether the exchange in progress runs in bare tokens (a
// SaslHandshake v0 began it).
func (s *Session) Raw() bool { return s.raw }

// Admits tells whether the connection may send a request of this API:
// before authentication (and after the session ended) only the SASL
// exchange and ApiVersions, as Kafka's brokers allow.
func (s *Session) Admits(key int16, now time.Time) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	}
	return s.principal != "" && (s.expires.IsZero() || now.Before(s.expires))
}

// ErrIllegalSASLState: an authentication message came with no exchange in
// progress.
var ErrIllegalSASLState = errors.New("no SASL handshake precedes this authentication")

// Begin starts an exchange with the mechanism a handshake chose, in bare
// tokens if raw; an authenticated connection may start one again to
// re-authenticate.
func (s *Session) Begin(mechanism string, raw bool) error {
	if s.mechanism != "" {
		return fmt.Errorf("a %s exchange is in progress", s.mechanism)
	}
	s.auth.catchUpCredentials()
	if h, ok := scramHash(mechanism); ok {
		s.scram = &scramExchange{hash: h, lookup: func(user string) meta.ScramCredential {
			cred, _ := s.auth.credential(mechanism, user)
			return cred
		}}
	}
	s.mechanism, s.raw = mechanism, raw
	return nil
}

// Step takes the client's next SASL message and returns the server's
// answer; done once the exchange succeeded. An error ends the exchange,
// and the connection with it.
func (s *Session) Step(msg []byte, now time.Time) (answer []byte, done bool, err error) {
	if s.mechanism == "" {
		return nil, false, ErrIllegalSASLState
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
	s.principal, s.mechanism, s.scram, s.raw = user, "", nil, false
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
func (s *Session) plain(msg []byte) (string, bool) {
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
