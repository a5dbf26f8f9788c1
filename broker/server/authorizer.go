package server

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/security"
)

// client is the connection as the authorizer sees it. A PLAINTEXT
// inter-broker listener is trusted: the other brokers and the operator
// use it, and it must be reachable by them alone.
func (c *clientConn) client() security.Client {
	return security.Client{Principal: c.principal(), Host: c.host(),
		Trusted: c.listener == c.srv.listeners[0] && c.listener.Protocol == security.Plaintext}
}

// principal is who the connection is, as Kafka names it: the SASL user,
// the subject of a verified client certificate, or User:ANONYMOUS.
func (c *clientConn) principal() string {
	switch {
	case c.sasl != nil && c.sasl.Principal() != "":
		return "User:" + c.sasl.Principal()
	case c.tlsPrincipal != "":
		return "User:" + c.tlsPrincipal
	}
	return "User:ANONYMOUS"
}

// host is the client's address, which ACLs may name.
func (c *clientConn) host() string { return c.remoteHost }

// remoteHost is a connection's client address without its port.
func remoteHost(nc net.Conn) string {
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// allowed asks the authorizer about the request's connection.
func (r *request) allowed(srv *Server, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return srv.Authz.Allows(r.conn.client(), op, rt, name)
}

// onTopic, onGroup and onCluster are the common questions, with the
// error Kafka answers when the answer is no.
func (r *request) onTopic(srv *Server, op kmsg.ACLOperation, topic string) *kerr.Error {
	if r.allowed(srv, op, kmsg.ACLResourceTypeTopic, topic) {
		return nil
	}
	return kerr.TopicAuthorizationFailed
}

func (r *request) onGroup(srv *Server, op kmsg.ACLOperation, group string) *kerr.Error {
	if r.allowed(srv, op, kmsg.ACLResourceTypeGroup, group) {
		return nil
	}
	return kerr.GroupAuthorizationFailed
}

func (r *request) onCluster(srv *Server, op kmsg.ACLOperation) *kerr.Error {
	if r.allowed(srv, op, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		return nil
	}
	return kerr.ClusterAuthorizationFailed
}

// clusterGated are the cluster-administration APIs, whose handlers do
// not ask the authorizer themselves: a client that is not trusted needs
// the operation on the cluster that Kafka asks for them. One without it
// gets Kafka's answer, CLUSTER_AUTHORIZATION_FAILED (deniedOnCluster).
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

// admitsAPI tells whether the connection may send a request of this API
// at all: false for a clusterGated one without its cluster operation.
func (c *clientConn) admitsAPI(key int16) bool {
	op, gated := clusterGated[kmsg.Key(key)]
	return !gated || c.srv.Authz.Allows(c.client(), op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}
