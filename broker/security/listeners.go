package security

import (
	"fmt"
	"net"
	"strings"
)

// SecurityProtocol is how a listener's connections are secured, with
// Kafka's names (listener.security.protocol.map).
type SecurityProtocol string

const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// SASL tells whether a connection must authenticate with SASL first.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// TLS tells whether a connection runs over TLS.
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// Listener is one named Kafka listener: where it binds, what clients that
// connect to it are told to use (Metadata, FindCoordinator and
// DescribeCluster answer each client with its listener's addresses), and
// its security protocol.
type Listener struct {
	Name       string
	Listen     string // host:port it binds
	Advertised string // host:port clients are told
	Protocol   SecurityProtocol
}

// defaultProtocolMap is Kafka's default listener.security.protocol.map:
// a listener named after a protocol uses it.
const defaultProtocolMap = "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL"

// ParseListeners reads Kafka's listeners, advertised.listeners and
// listener.security.protocol.map ("NAME://host:port,...", the same, and
// "NAME:PROTOCOL,..."). advertised may be empty or name only some
// listeners: the others advertise their bind address. protocolMap empty is
// Kafka's default.
func ParseListeners(listeners, advertised, protocolMap string) ([]Listener, error) {
	if protocolMap == "" {
		protocolMap = defaultProtocolMap
	}
	protocols := map[string]SecurityProtocol{}
	for _, part := range SplitList(protocolMap, ",") {
		name, proto, ok := strings.Cut(part, ":")
		p := SecurityProtocol(strings.ToUpper(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("listener security protocol %q: want NAME:PROTOCOL", part)
		}
		switch p {
		case Plaintext, SASLPlaintext, SSL, SASLSSL:
		default:
			return nil, fmt.Errorf("listener %s: unknown security protocol %q", name, proto)
		}
		protocols[strings.ToUpper(name)] = p
	}
	parse := func(what, s string) ([]Listener, error) {
		var out []Listener
		for _, part := range SplitList(s, ",") {
			name, addr, ok := strings.Cut(part, "://")
			name = strings.ToUpper(name)
			if !ok || name == "" {
				return nil, fmt.Errorf("%s %q: want NAME://host:port", what, part)
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return nil, fmt.Errorf("%s %q: %v", what, part, err)
			}
			for _, l := range out {
				if l.Name == name {
					return nil, fmt.Errorf("%s: listener %s is named twice", what, name)
				}
			}
			out = append(out, Listener{Name: name, Listen: addr})
		}
		return out, nil
	}
	out, err := parse("listener", listeners)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no listeners")
	}
	adv, err := parse("advertised listener", advertised)
	if err != nil {
		return nil, err
	}
	for i := range out {
		l := &out[i]
		p, ok := protocols[l.Name]
		if !ok {
			return nil, fmt.Errorf("listener %s has no security protocol in the listener security protocol map", l.Name)
		}
		l.Protocol, l.Advertised = p, l.Listen
	}
	for _, a := range adv {
		i := listenerIndex(out, a.Name)
		if i < 0 {
			return nil, fmt.Errorf("advertised listener %s is not a listener", a.Name)
		}
		out[i].Advertised = a.Listen
	}
	return out, nil
}

func listenerIndex(ls []Listener, name string) int {
	for i, l := range ls {
		if l.Name == name {
			return i
		}
	}
	return -1
}

// SplitList splits a list at sep, trimmed, without empty parts.
func SplitList(s, sep string) []string {
	var out []string
	for _, part := range strings.Split(s, sep) {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
