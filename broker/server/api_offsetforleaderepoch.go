package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch v2-v4: clients use it to detect log truncation after
// a leader change; v4 flexible.
func init() { register(kmsg.OffsetForLeaderEpoch, 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		denied := r.onTopic(srv, kmsg.ACLOperationDescribe, t.Topic)
		if req.ReplicaID >= 0 {
			denied = r.onCluster(srv, kmsg.ACLOperationClusterAction)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rep, info, err := srv.actingReplica(t.Topic, p.Partition, true)
			switch {
			case denied != nil:
				rp.ErrorCode = denied.Code
			case err != nil:
				rp.ErrorCode = err.Code
			case p.CurrentLeaderEpoch >= 0 && p.CurrentLeaderEpoch < info.LeaderEpoch:
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case p.CurrentLeaderEpoch > info.LeaderEpoch:
				rp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			default:
				rp.LeaderEpoch, rp.EndOffset = rep.StateMachine().Log().EndOffsetForEpoch(p.LeaderEpoch)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
