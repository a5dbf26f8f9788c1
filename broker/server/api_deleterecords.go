package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/partition"
)

// DeleteRecords v0-v2: moves a partition's log start through Raft (-1 means
// the high watermark); v2 flexible.
func init() { register(kmsg.DeleteRecords, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(b *Broker, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	ctx, cancel := context.WithTimeout(b.ctx, adminTimeout(req.TimeoutMillis, 60*time.Second))
	defer cancel()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		denied := r.onTopic(b, kmsg.ACLOperationDelete, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			if denied != nil {
				rp.ErrorCode = denied.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rep, info, err := b.leaderReplica(t.Topic, p.Partition)
			if err != nil {
				rp.ErrorCode = err.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			offset := p.Offset
			if offset == -1 {
				_, offset = rep.StateMachine().Log().Offsets()
			}
			res, perr := b.nh.SyncPropose(ctx, b.nh.GetNoOPSession(info.Shard), partition.DeleteRecordsCommand(offset))
			if perr != nil {
				rp.ErrorCode = kerr.RequestTimedOut.Code
			} else if out := partition.DecodeResult(res); out.Err != nil {
				rp.ErrorCode = errCode(out.Err)
			} else {
				rp.LowWatermark = out.LogStartOffset
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
