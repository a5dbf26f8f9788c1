package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
)

// supportedOperations are the operations Kafka reports on each resource
// type in an authorized-operations bit field (its AclEntry's
// supportedOperations).
var supportedOperations = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
}

// authorizedOperations is the bit field Kafka answers when a client asks
// what it may do on a resource (KIP-430): bit n set for operation n, for
// each supported operation that allows grants.
func authorizedOperations(rt kmsg.ACLResourceType, allows func(kmsg.ACLOperation) bool) int32 {
	var bits int32
	for _, op := range supportedOperations[rt] {
		if allows(op) {
			bits |= 1 << op
		}
	}
	return bits
}

// clusterOperations is what the request's principal may do on the
// cluster, for Metadata and DescribeCluster: Kafka reports it only to a
// principal that may describe the cluster, and 0 to any other.
func (r *request) clusterOperations(srv *Server) int32 {
	allows := func(op kmsg.ACLOperation) bool {
		return r.allowed(srv, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	if !allows(kmsg.ACLOperationDescribe) {
		return 0
	}
	return authorizedOperations(kmsg.ACLResourceTypeCluster, allows)
}
