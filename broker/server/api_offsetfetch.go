package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// OffsetFetch v1-v8: a null topic list means every committed partition
// (v2+); v6 flexible; v7 require_stable; v8 batches groups.
func init() { register(kmsg.OffsetFetch, 1, 8, handleOffsetFetch) }

func handleOffsetFetch(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	refusal := srv.coordinatorRefusal()
	if req.GetVersion() < 8 {
		// Before v8 a request names one group; answer it through the
		// batched form and copy the answer back.
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = req.Group
		if req.Topics != nil {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range req.Topics {
				g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
		}
		rg := srv.offsetFetchGroup(r, g, refusal, req.RequireStable)
		resp.ErrorCode = rg.ErrorCode
		for _, t := range rg.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, g := range req.Groups {
		resp.Groups = append(resp.Groups, srv.offsetFetchGroup(r, g, refusal, req.RequireStable))
	}
	return resp, nil
}

// offsetFetchGroup answers one group: DESCRIBE on the group is needed,
// and a topic the client may not describe is answered
// TOPIC_AUTHORIZATION_FAILED, or left out when every topic was asked.
// With stable, a partition whose offset an open transaction is to commit
// is answered UNSTABLE_OFFSET_COMMIT, which clients retry: a consumer
// that took over from a transactional producer starts after its commit,
// not before it (KIP-447).
func (srv *Server) offsetFetchGroup(r *request, g kmsg.OffsetFetchRequestGroup, refusal *kerr.Error, stable bool) kmsg.OffsetFetchResponseGroup {
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = g.Group
	if err := r.onGroup(srv, kmsg.ACLOperationDescribe, g.Group); err != nil {
		rg.ErrorCode = err.Code
		return rg
	}
	if refusal != nil {
		rg.ErrorCode = refusal.Code
		return rg
	}
	var asked map[string][]int32
	if g.Topics != nil {
		asked = map[string][]int32{}
		for _, t := range g.Topics {
			asked[t.Topic] = t.Partitions
		}
	}
	for topic, parts := range srv.committedOffsets(g.Group, asked, stable) {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = topic
		denied := r.onTopic(srv, kmsg.ACLOperationDescribe, topic)
		if denied != nil && asked == nil {
			continue
		}
		for _, p := range parts {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
			switch {
			case denied != nil:
				rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = -1, -1, nil, denied.Code
			case p.unstable:
				rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = -1, -1, nil, kerr.UnstableOffsetCommit.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

type committed struct {
	partition int32
	meta.GroupOffset
	// unstable: an open transaction holds an offset of the partition's
	// for the group (asked for with stable only).
	unstable bool
}

// committedOffsets returns a group's offsets for the asked partitions (all
// when asked is nil); a partition without a commit gets offset -1.
func (srv *Server) committedOffsets(group string, asked map[string][]int32, stable bool) map[string][]committed {
	out := map[string][]committed{}
	srv.Meta.Read(func(s *meta.State) {
		unstable := func(topic string, p int32) bool { return stable && s.PendingTxnOffset(group, topic, p) }
		if asked == nil {
			s.EachGroupOffset(group, func(topic string, p int32, o meta.GroupOffset) {
				out[topic] = append(out[topic], committed{partition: p, GroupOffset: o, unstable: unstable(topic, p)})
			})
			return
		}
		for topic, parts := range asked {
			for _, p := range parts {
				o, ok := s.GroupOffset(group, topic, p)
				switch {
				case !ok && s.StartsGrownPartition(group, topic, p):
					o = meta.GroupOffset{Offset: srv.logStart(s, topic, p), LeaderEpoch: -1}
				case !ok:
					o = meta.GroupOffset{Offset: -1, LeaderEpoch: -1}
				}
				out[topic] = append(out[topic], committed{partition: p, GroupOffset: o, unstable: unstable(topic, p)})
			}
		}
	})
	return out
}

// logStart is where a group starts a partition an ordered growth made:
// its log start as this broker's replica has it, or 0 where it holds
// none; a start that retention passed since is answered OFFSET_OUT_OF_RANGE
// by the fetch, and the group's reset policy applies then.
func (srv *Server) logStart(s *meta.State, topic string, index int32) int64 {
	_, p := s.Partition(topic, index)
	if rep := srv.Replicas.Replica(p.Shard); rep != nil {
		start, _ := rep.StateMachine().Log().Offsets()
		return start
	}
	return 0
}
