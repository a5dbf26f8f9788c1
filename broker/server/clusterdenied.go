package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deniedOnCluster answers a clusterGated request whose principal lacks the
// cluster operation as Kafka's brokers do: CLUSTER_AUTHORIZATION_FAILED
// where the response has a place for an error, on every partition asked
// about as well where it lists them. Closing the connection instead made
// clients retry an EOF until their timeout (kadm's DescribeAllLogDirs for
// 28 s) and never say why.
func deniedOnCluster(_ *Server, r *request) (kmsg.Response, error) {
	denied := kerr.ClusterAuthorizationFailed.Code
	msg := kmsg.StringPtr("the principal lacks the operation this API needs on the cluster")
	switch req := r.kreq.(type) {
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = denied, msg
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, denied, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.ElectLeadersRequest:
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = denied
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, denied, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.ListPartitionReassignmentsRequest:
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = denied, msg
		return resp, nil
	case *kmsg.DescribeLogDirsRequest:
		// Before v3 the answer has no error: Kafka lists no directory.
		resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		resp.ErrorCode = denied
		return resp, nil
	case *kmsg.DescribeQuorumRequest:
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode, resp.ErrorMessage = denied, msg
		return resp, nil
	case *kmsg.AddRaftVoterRequest:
		resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = denied, msg
		return resp, nil
	case *kmsg.RemoveRaftVoterRequest:
		resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = denied, msg
		return resp, nil
	case *kmsg.UnregisterBrokerRequest:
		resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode, resp.ErrorMessage = denied, msg
		return resp, nil
	}
	return nil, errNotGated
}

// errNotGated: deniedOnCluster was asked to answer an API that is not in
// clusterGated (TestEveryGatedAPIIsAnsweredWhenDenied keeps them in step).
var errNotGated = errors.New("no cluster-authorization answer for this API")
