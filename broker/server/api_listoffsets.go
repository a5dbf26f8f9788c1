package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
	"github.com/raftka/raftka/broker/replica"
)

// ListOffsets v0-v7: earliest (-2), latest (-1; the last stable offset for
// read_committed), max timestamp (-3, v7),
// or the first offset at a timestamp; v6 flexible. v0, which Kafka 3
// still serves and older sarama clients send (Burrow 1.2), answers a list
// of offsets: the one asked for.
func init() { register(kmsg.ListOffsets, 0, 7, handleListOffsets) }

func handleListOffsets(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		denied := r.onTopic(srv, kmsg.ACLOperationDescribe, t.Topic)
		if req.ReplicaID >= 0 {
			denied = r.onCluster(srv, kmsg.ACLOperationClusterAction)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			if denied != nil {
				rp.ErrorCode = denied.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if t.Topic == meta.OffsetsTopic {
				rt.Partitions = append(rt.Partitions, srv.listOffsetsTopic(p))
				continue
			}
			var rep *replica.Replica
			var info partitionInfo
			var err *kerr.Error
			if req.ReplicaID >= 0 {
				// A partition's leader asking how far this replica got
				// (see insync.go): answered from the local replica.
				rep, err = srv.hostedReplica(t.Topic, p.Partition)
			} else {
				rep, info, err = srv.actingReplica(t.Topic, p.Partition, true)
				rp.LeaderEpoch = info.LeaderEpoch
			}
			if err != nil {
				rp.ErrorCode = err.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			log := rep.StateMachine().Log()
			start, end := log.Offsets()
			if req.ReplicaID < 0 && info.Held {
				end = min(end, info.Hold) // a `latest` reset during an ordered growth's hold skips nothing
			}
			if req.ReplicaID < 0 && req.IsolationLevel == 1 {
				end = min(end, log.LastStable()) // read_committed reads no further
			}
			var rerr error
			switch p.Timestamp {
			case -2:
				rp.Offset = start
			case -1:
				rp.Offset = end
			case -3:
				rp.Offset, rp.Timestamp, rerr = log.MaxTimestamp()
			default:
				rp.Offset, rp.Timestamp, rerr = log.OffsetForTimestamp(p.Timestamp)
			}
			if rp.Offset > end {
				rp.Offset, rp.Timestamp = end, -1 // past a hold, as past the log end
			}
			switch {
			case errors.Is(rerr, partition.ErrOffsetOutOfRange):
				// Retention deleted the segment being read: ask again.
				rp.ErrorCode = kerr.OffsetNotAvailable.Code
			case rerr != nil:
				rp.ErrorCode = kerr.KafkaStorageError.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version == 0 {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if rp := &resp.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
					rp.OldStyleOffsets = []int64{rp.Offset}
				}
			}
		}
	}
	return resp, nil
}
