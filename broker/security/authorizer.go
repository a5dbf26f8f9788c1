package security

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
)

// AuthorizerConfig turns ACLs on (Kafka's authorizer.class.name).
type AuthorizerConfig struct {
	// Enabled checks every request against the ACLs in the metadata;
	// off, every request is allowed and the ACL APIs answer
	// SECURITY_DISABLED, as Kafka's brokers without an authorizer.
	Enabled bool
	// SuperUsers ("User:admin") may do anything (Kafka's super.users).
	SuperUsers []string
}

// ParseSuperUsers reads Kafka's super.users: "User:a;User:b".
func ParseSuperUsers(s string) []string { return SplitList(s, ";") }

// ACLs is where the authorizer finds the ACL bindings: the metadata,
// which answers within its own read.
type ACLs interface {
	ACLsAllow(acl.Request) bool
}

// Client is who sends a request, as the authorizer sees it.
type Client struct {
	// Principal is Kafka's name for it: "User:alice", "User:CN=...", or
	// "User:ANONYMOUS".
	Principal string
	// Host is the client's address, which ACLs may name.
	Host string
	// Trusted: it came through a PLAINTEXT inter-broker listener, which
	// the other brokers (fetching for their replicas) and the operator
	// use, and which must be reachable by them alone. A SASL_PLAINTEXT
	// one is checked as any other: the brokers authenticate on it as a
	// super user.
	Trusted bool
}

// Authorizer decides requests from the ACL bindings in the metadata.
type Authorizer struct {
	cfg  AuthorizerConfig
	acls ACLs
}

// NewAuthorizer is an authorizer with cfg over the bindings of acls.
func NewAuthorizer(cfg AuthorizerConfig, acls ACLs) *Authorizer {
	return &Authorizer{cfg: cfg, acls: acls}
}

// Enabled tells whether requests are checked at all.
func (a *Authorizer) Enabled() bool { return a.cfg.Enabled }

// Allows tells whether the client may do op on a resource.
func (a *Authorizer) Allows(c Client, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a.Unchecked(c) || a.acls.ACLsAllow(request(c, op, rt, name))
}

// AllowsIn is Allows within a read of the metadata, over its bindings.
func (a *Authorizer) AllowsIn(bindings []acl.Binding, c Client, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a.Unchecked(c) || acl.Allowed(bindings, request(c, op, rt, name))
}

func request(c Client, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) acl.Request {
	return acl.Request{Principal: c.Principal, Host: c.Host, Operation: op, ResourceType: rt, ResourceName: name}
}

// Unchecked: the authorizer is off, the client is trusted, or its
// principal is a super user.
func (a *Authorizer) Unchecked(c Client) bool {
	if !a.cfg.Enabled || c.Trusted {
		return true
	}
	for _, su := range a.cfg.SuperUsers {
		if su == c.Principal {
			return true
		}
	}
	return false
}
