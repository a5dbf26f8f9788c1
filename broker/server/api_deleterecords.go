package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/partition"
)

// DeleteRecords v0-v2: moves a partition's log start through Raft (-1 means
// the high watermark); v2 flexible.
func init() { register(kmsg.DeleteRecords, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	ctx, cancel := context.WithTimeout(srv.ctx, adminTimeout(req.TimeoutMillis, 60*time.Second))
	defer cancel()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		denied := r.onTopic(srv, kmsg.ACLOperationDelete, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			if denied != nil {
				rp.ErrorCode = denied.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rep, info, err := srv.leaderReplica(t.Topic, p.Partition)
			if err != nil {
				rp.ErrorCode = err.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			offset := p.Offset
			if offset == -1 {
				_, offset = rep.StateMachine().Log().Offsets()
			}
			res, perr := srv.Raft.SyncPropose(ctx, srv.Raft.GetNoOPSession(info.Shard), partition.DeleteRecordsCommand(offset))
			if perr != nil {
				rp.ErrorCode = kerr.RequestTimedOut.Code
			} else if out := partition.DecodeResult(res); out.Err != nil {
				rp.ErrorCode = kafkaerr.Code(out.Err)
			} else {
				rp.LowWatermark = out.LogStartOffset
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
