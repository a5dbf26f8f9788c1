package server

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// ListPartitionReassignments v0 (flexible): the moves under way, as
// Kafka reports them: the replicas (the target's first, then those it
// drops), and which are being added and removed. A cancelled move that is
// still removing what it added is not listed, as in Kafka.
func init() { register(kmsg.ListPartitionReassignments, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	srv.Meta.Read(func(s *meta.State) {
		var asked map[string][]int32
		if req.Topics != nil {
			asked = map[string][]int32{}
			for _, t := range req.Topics {
				asked[t.Topic] = append(asked[t.Topic], t.Partitions...)
			}
		}
		for _, name := range s.TopicNames() {
			partitions, wanted := asked[name]
			if asked != nil && !wanted {
				continue
			}
			t := s.Topic(name)
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = name
			for _, p := range t.Partitions {
				if p.Reassignment == nil || p.Reassignment.Cancelled() || (asked != nil && !slices.Contains(partitions, p.Index)) {
					continue
				}
				rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
				rp.Partition = p.Index
				rp.Replicas = append([]int32(nil), p.Replicas...)
				rp.AddingReplicas = p.Reassignment.Adding()
				rp.RemovingReplicas = p.Reassignment.Removing()
				rt.Partitions = append(rt.Partitions, rp)
			}
			if len(rt.Partitions) > 0 {
				sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].Partition < rt.Partitions[j].Partition })
				resp.Topics = append(resp.Topics, rt)
			}
		}
	})
	return resp, nil
}
