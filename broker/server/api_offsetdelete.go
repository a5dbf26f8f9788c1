package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// OffsetDelete v0 (KIP-496): deletes a group's committed offsets for some
// partitions. A live consumer group keeps those of topics its members
// subscribe to (GROUP_SUBSCRIBED_TO_TOPIC); a live group of another
// protocol keeps all of them (NON_EMPTY_GROUP).
func init() { register(kmsg.OffsetDelete, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if err := r.onGroup(srv, kmsg.ACLOperationDelete, req.Group); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if refusal := srv.coordinatorRefusal(); refusal != nil {
		resp.ErrorCode = refusal.Code
		return resp, nil
	}
	known := srv.Meta.HasGroupOffsets(req.Group)
	live, alive := srv.Groups.Describe(req.Group)
	alive = alive && len(live.Members) > 0
	switch {
	case !known && !alive:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp, nil
	case alive && live.ProtocolType != "consumer":
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp, nil
	}
	// A member whose subscription cannot be read (no protocol chosen yet)
	// may consume any topic, as Kafka also assumes.
	subscribed, subscribedAll := map[string]bool{}, false
	for _, m := range live.Members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.Metadata); err != nil || len(m.Metadata) == 0 {
			subscribedAll = true
		}
		for _, t := range md.Topics {
			subscribed[t] = true
		}
	}
	doomed := &meta.DeleteOffsets{Group: req.Group, Partitions: map[string][]int32{}}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		denied := r.onTopic(srv, kmsg.ACLOperationRead, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			_, err := srv.partitionFor(t.Topic, p.Partition)
			switch {
			case denied != nil:
				rp.ErrorCode = denied.Code
			case err != nil:
				rp.ErrorCode = err.Code
			case subscribedAll || subscribed[t.Topic]:
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				doomed.Partitions[t.Topic] = append(doomed.Partitions[t.Topic], p.Partition)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(doomed.Partitions) == 0 {
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(srv.ctx, 10*time.Second)
	defer cancel()
	if out, err := srv.Propose(ctx, &meta.Command{DeleteOffsets: doomed}); err != nil || out.Err != nil {
		code := kerr.RequestTimedOut.Code
		if err == nil {
			code = kafkaerr.Code(out.Err)
		}
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].ErrorCode == 0 {
					resp.Topics[i].Partitions[j].ErrorCode = code
				}
			}
		}
	}
	return resp, nil
}
