package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// AlterPartitionReassignments v0-v1 (flexible): moves partitions' replicas
// (kafka-reassign-partitions.sh, kadm, the Java admin client); replicas
// null cancels a move. The metadata records the move at once and the
// partition's leader carries it out (package replica): new replicas join as
// observers, are promoted once caught up, and only then do the replicas
// the move drops leave. v1 refuses a change of the replica count unless
// the request allows it.
func init() { register(kmsg.AlterPartitionAssignments, 0, 1, handleAlterPartitionAssignments) }

func handleAlterPartitionAssignments(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	timeout := adminTimeout(req.TimeoutMillis, 60*time.Second)
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
		ctx, cancel := context.WithTimeout(srv.ctx, timeout)
		defer cancel()
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition = p.Partition
				if err, msg := srv.reassign(ctx, req, t.Topic, p); err != nil {
					rp.ErrorCode, rp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return nil, nil
}

func (srv *Server) reassign(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest, topic string, p kmsg.AlterPartitionAssignmentsRequestTopicPartition) (*kerr.Error, string) {
	rules := srv.placementRules()
	if rules < meta.PlacementEpochs {
		return kerr.InvalidRequest, "brokers from before replica moves are still running: finish the upgrade first"
	}
	if p.Replicas != nil && req.Version >= 1 && !req.AllowReplicationFactorChange {
		current := -1
		srv.Meta.Read(func(s *meta.State) {
			if t := s.Topic(topic); t != nil && p.Partition >= 0 && int(p.Partition) < len(t.Partitions) {
				current = len(t.Partitions[p.Partition].TargetReplicas())
			}
		})
		if current >= 0 && current != len(p.Replicas) {
			return kerr.InvalidReplicationFactor, "the move changes the partition's replica count, which the request does not allow"
		}
	}
	out, err := srv.Propose(ctx, &meta.Command{Reassign: &meta.Reassign{Topic: topic, Partition: p.Partition, Target: p.Replicas, Cancel: p.Replicas == nil,
		Capacity: rules >= meta.PlacementCapacity}})
	if err != nil {
		return kerr.RequestTimedOut, "the metadata group did not answer in time"
	}
	if out.Err == nil {
		return nil, ""
	}
	ke := kafkaerr.Of(out.Err, kerr.UnknownServerError)
	switch ke {
	case kerr.InvalidReplicaAssignment:
		return ke, "replicas must name each broker once, only brokers the cluster knows, and at least one"
	case kerr.InvalidReplicationFactor:
		return ke, "fewer replicas than the topic's min.insync.replicas"
	case kerr.ReassignmentInProgress:
		return ke, "a move of this partition is under way: cancel it (null replicas) or wait for it"
	case kerr.NoReassignmentInProgress:
		return ke, "no move of this partition is under way"
	case kerr.PolicyViolation:
		return ke, srv.replicaLimitMessage()
	}
	return ke, ke.Message
}
