package server

import (
	"context"
	"errors"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/replica"
)

// OffsetCommit v2-v8: commits go through the metadata Raft group, so they
// survive the coordinator; v7 static membership, v8 flexible.
func init() { register(kmsg.OffsetCommit, 2, 8, handleOffsetCommit) }

func handleOffsetCommit(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	code := int16(0)
	groupDenied := r.onGroup(srv, kmsg.ACLOperationRead, req.Group)
	var refusal *kerr.Error
	if groupDenied == nil {
		refusal = srv.coordinatorRefusal()
	}
	switch {
	case groupDenied != nil:
		code = groupDenied.Code
	case refusal != nil:
		code = refusal.Code
	case req.Group == "":
		code = kerr.InvalidGroupID.Code
	default:
		if err := srv.Groups.ValidateCommit(req.Group, req.MemberID, req.InstanceID, req.Generation); err != nil {
			code = err.Code
		}
	}
	commit := &meta.CommitOffsets{Group: req.Group, Offsets: map[string]map[int32]meta.GroupOffset{}}
	now := time.Now().UnixMilli() // the coordinator's clock, proposed: replicas apply it as given
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		topicDenied := r.onTopic(srv, kmsg.ACLOperationRead, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			if code == 0 && topicDenied != nil {
				rp.ErrorCode = topicDenied.Code
			} else if code == 0 {
				if _, err := srv.partitionFor(t.Topic, p.Partition); err != nil {
					rp.ErrorCode = err.Code
				} else {
					addGroupOffset(commit.Offsets, t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, now)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(commit.Offsets) == 0 {
		return resp, nil
	}
	r.deferred = func() kmsg.Response {
		ctx, cancel := context.WithTimeout(srv.ctx, 10*time.Second)
		defer cancel()
		out, err := srv.Propose(ctx, &meta.Command{CommitOffsets: commit})
		if err == nil && out.Err == nil {
			return resp
		}
		failed := kerr.RequestTimedOut.Code
		switch {
		case errors.Is(err, replica.ErrDeposed):
			// The group moves with the metadata group's leadership;
			// clients look up the new coordinator.
			failed = kerr.NotCoordinator.Code
		case err == nil:
			failed = kafkaerr.Code(out.Err)
		}
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if rp := &resp.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
					rp.ErrorCode = failed
				}
			}
		}
		return resp
	}
	return nil, nil
}

// addGroupOffset puts a partition's offset into a commit's offsets
// (OffsetCommit, TxnOffsetCommit), stamped at now, the coordinator's clock.
func addGroupOffset(offsets map[string]map[int32]meta.GroupOffset, topic string, partition int32, offset int64, leaderEpoch int32, metadata *string, now int64) {
	if offsets[topic] == nil {
		offsets[topic] = map[int32]meta.GroupOffset{}
	}
	o := meta.GroupOffset{Offset: offset, LeaderEpoch: leaderEpoch, CommittedAt: now}
	if metadata != nil {
		o.Metadata = *metadata
	}
	offsets[topic][partition] = o
}
