package server

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/meta"
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
func ParseSuperUsers(s string) []string { return splitOn(s, ";") }

// authorizer decides requests from the ACL bindings in the metadata.
type authorizer struct {
	cfg  AuthorizerConfig
	meta *meta.StateMachine
}

// allows tells whether the connection may do op on a resource. A
// PLAINTEXT inter-broker listener is trusted: the other brokers (fetching
// for their replicas) and the operator use it, and it must be reachable
// by them alone; clients use the other listeners. A SASL_PLAINTEXT one
// is checked as any other: the brokers authenticate on it as a super user.
func (a *authorizer) allows(c *clientConn, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.unchecked(c) {
		return true
	}
	allowed := false
	a.meta.Read(func(s *meta.State) { allowed = a.allowsIn(s, c, op, rt, name) })
	return allowed
}

// allowsIn is allows within a read of the metadata.
func (a *authorizer) allowsIn(s *meta.State, c *clientConn, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a.unchecked(c) || acl.Allowed(s.ACLs(), acl.Request{Principal: c.principal(), Host: c.host(), Operation: op, ResourceType: rt, ResourceName: name})
}

// unchecked: the authorizer is off, the connection came through a
// PLAINTEXT inter-broker listener, or its principal is a super user.
func (a *authorizer) unchecked(c *clientConn) bool {
	if !a.cfg.Enabled || c.listener == c.b.listeners[0] && c.listener.Protocol == Plaintext {
		return true
	}
	principal := c.principal()
	for _, su := range a.cfg.SuperUsers {
		if su == principal {
			return true
		}
	}
	return false
}

// principal is who the connection is, as Kafka names it: the SASL user,
// the subject of a verified client certificate, or User:ANONYMOUS.
func (c *clientConn) principal() string {
	switch {
	case c.sasl != nil && c.sasl.principal != "":
		return "User:" + c.sasl.principal
	case c.tlsPrincipal != "":
		return "User:" + c.tlsPrincipal
	}
	return "User:ANONYMOUS"
}

// host is the client's address, which ACLs may name.
func (c *clientConn) host() string {
	host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String())
	if err != nil {
		return c.nc.RemoteAddr().String()
	}
	return host
}

// allowed asks the authorizer about the request's connection.
func (r *request) allowed(b *Broker, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return b.authz.allows(r.conn, op, rt, name)
}

// onTopic, onGroup and onCluster are the common questions, with the
// error Kafka answers when the answer is no.
func (r *request) onTopic(b *Broker, op kmsg.ACLOperation, topic string) *kerr.Error {
	if r.allowed(b, op, kmsg.ACLResourceTypeTopic, topic) {
		return nil
	}
	return kerr.TopicAuthorizationFailed
}

func (r *request) onGroup(b *Broker, op kmsg.ACLOperation, group string) *kerr.Error {
	if r.allowed(b, op, kmsg.ACLResourceTypeGroup, group) {
		return nil
	}
	return kerr.GroupAuthorizationFailed
}

func (r *request) onCluster(b *Broker, op kmsg.ACLOperation) *kerr.Error {
	if r.allowed(b, op, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		return nil
	}
	return kerr.ClusterAuthorizationFailed
}

// clusterGated are the cluster-administration APIs, whose handlers do
// not ask the authorizer themselves: a client that is not trusted needs
// the operation on the cluster that Kafka asks for them. One without it
// is disconnected rather than answered with a per-item error.
var clusterGated = map[kmsg.Key]kmsg.ACLOperation{
	kmsg.AlterPartitionAssignments:  kmsg.ACLOperationAlter,
	kmsg.ListPartitionReassignments: kmsg.ACLOperationDescribe,
	kmsg.ElectLeaders:               kmsg.ACLOperationAlter,
	kmsg.DescribeLogDirs:            kmsg.ACLOperationDescribe,
	kmsg.DescribeQuorum:             kmsg.ACLOperationDescribe,
	kmsg.AddRaftVoter:               kmsg.ACLOperationAlter,
	kmsg.RemoveRaftVoter:            kmsg.ACLOperationAlter,
	kmsg.UnregisterBroker:           kmsg.ACLOperationAlter,
}

// admitsAPI tells whether a connection may send a request of this API at
// all: false for a clusterGated one without its cluster operation.
func (a *authorizer) admitsAPI(c *clientConn, key int16) bool {
	op, gated := clusterGated[kmsg.Key(key)]
	return !gated || a.allows(c, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}
