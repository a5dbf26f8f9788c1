package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// OffsetFetch v1-v8: a null topic list means every committed partition
// (v2+); v6 flexible; v8 batches groups.
func init() { register(kmsg.OffsetFetch, 1, 8, handleOffsetFetch) }

func handleOffsetFetch(b *Broker, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	coordinator := b.isCoordinator()
	if req.GetVersion() >= 8 {
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			if !coordinator {
				rg.ErrorCode = kerr.NotCoordinator.Code
			} else {
				var asked map[string][]int32
				if g.Topics != nil {
					asked = map[string][]int32{}
					for _, t := range g.Topics {
						asked[t.Topic] = t.Partitions
					}
				}
				for topic, parts := range b.committedOffsets(g.Group, asked) {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.Topic = topic
					for _, p := range parts {
						rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
						rt.Partitions = append(rt.Partitions, rp)
					}
					rg.Topics = append(rg.Topics, rt)
				}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	if !coordinator {
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil
	}
	var asked map[string][]int32
	if req.Topics != nil {
		asked = map[string][]int32{}
		for _, t := range req.Topics {
			asked[t.Topic] = t.Partitions
		}
	}
	for topic, parts := range b.committedOffsets(req.Group, asked) {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

type committed struct {
	partition int32
	meta.GroupOffset
}

// committedOffsets returns a group's offsets for the asked partitions (all
// when asked is nil); a partition without a commit gets offset -1.
func (b *Broker) committedOffsets(group string, asked map[string][]int32) map[string][]committed {
	out := map[string][]committed{}
	b.meta.Read(func(s *meta.State) {
		g := s.Offsets[group]
		if asked == nil {
			for topic, parts := range g {
				for p, o := range parts {
					out[topic] = append(out[topic], committed{partition: p, GroupOffset: o})
				}
			}
			return
		}
		for topic, parts := range asked {
			for _, p := range parts {
				o, ok := g[topic][p]
				if !ok {
					o = meta.GroupOffset{Offset: -1, LeaderEpoch: -1}
				}
				out[topic] = append(out[topic], committed{partition: p, GroupOffset: o})
			}
		}
	})
	return out
}
