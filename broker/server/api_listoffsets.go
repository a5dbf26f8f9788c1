package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets v1-v7: earliest (-2), latest (-1), max timestamp (-3, v7),
// or the first offset at a timestamp; v6 flexible.
func init() { register(kmsg.ListOffsets, 1, 7, handleListOffsets) }

func handleListOffsets(b *Broker, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rep, info, err := b.actingReplica(t.Topic, p.Partition, true)
			if err != nil {
				rp.ErrorCode = err.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rp.LeaderEpoch = info.leaderEpoch
			log := rep.sm.Log()
			start, end := log.Offsets()
			switch p.Timestamp {
			case -2:
				rp.Offset = start
			case -1:
				rp.Offset = end
			case -3:
				rp.Offset, rp.Timestamp = log.MaxTimestamp()
			default:
				rp.Offset, rp.Timestamp = log.OffsetForTimestamp(p.Timestamp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
