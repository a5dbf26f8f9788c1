package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/offsetstopic"
)

// The read-only __consumer_offsets topic (package offsetstopic) is served
// by the metadata group's leader, the coordinator of every group, as a
// Kafka partition is by the leader that coordinates its groups. Its
// replicas are the metadata group's voters.

// offsetsTopicMetadata is __consumer_offsets in a Metadata answer: an
// internal topic of OffsetsTopicPartitions partitions led by the
// coordinator.
func (srv *Server) offsetsTopicMetadata(s *meta.State, leader int32) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID, mt.IsInternal = kmsg.StringPtr(meta.OffsetsTopic), s.OffsetsTopicID(), true
	replicas := s.MetadataVoters()
	if replicas == nil { // the founding voters, which the metadata does not list: the first brokers
		ids := s.BrokerIDs()
		replicas = ids[:min(3, len(ids))]
	}
	if leader >= 0 && !slices.Contains(replicas, leader) {
		replicas = append(replicas, leader)
	}
	var isr, offline []int32
	for _, id := range replicas {
		if srv.Liveness.IsLive(id) || id == leader {
			isr = append(isr, id)
		} else {
			offline = append(offline, id)
		}
	}
	for p := range int32(meta.OffsetsTopicPartitions) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = p, leader, -1
		mp.Replicas, mp.ISR, mp.OfflineReplicas = replicas, isr, offline
		if leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// fetchOffsetsTopic answers a fetch of one partition of __consumer_offsets
// on the coordinator, and NOT_LEADER_OR_FOLLOWER elsewhere.
func (srv *Server) fetchOffsetsTopic(p kmsg.FetchRequestTopicPartition, maxBytes int) (kmsg.FetchResponseTopicPartition, bool) {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition, rp.RecordBatches = p.Partition, []byte{}
	if p.Partition < 0 || p.Partition >= meta.OffsetsTopicPartitions {
		rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return rp, true
	}
	if !srv.isCoordinator() {
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		return rp, true
	}
	failed := false
	srv.Meta.Read(func(s *meta.State) {
		end := s.OffsetsTopicEnd(p.Partition)
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = end, end, 0
		if p.FetchOffset < 0 || p.FetchOffset > end {
			rp.ErrorCode, failed = kerr.OffsetOutOfRange.Code, true
			return
		}
		if data := offsetstopic.Batches(s, p.Partition, p.FetchOffset, maxBytes); data != nil {
			rp.RecordBatches = data // else empty, not null: librdkafka rejects a null record set
		}
	})
	return rp, failed
}

// listOffsetsTopic answers ListOffsets for a partition of
// __consumer_offsets.
func (srv *Server) listOffsetsTopic(p kmsg.ListOffsetsRequestTopicPartition) kmsg.ListOffsetsResponseTopicPartition {
	rp := kmsg.NewListOffsetsResponseTopicPartition()
	rp.Partition, rp.Timestamp, rp.LeaderEpoch = p.Partition, -1, -1
	switch {
	case p.Partition < 0 || p.Partition >= meta.OffsetsTopicPartitions:
		rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return rp
	case !srv.isCoordinator():
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		return rp
	}
	srv.Meta.Read(func(s *meta.State) {
		switch p.Timestamp {
		case -2:
			rp.Offset = 0
		case -1:
			rp.Offset = s.OffsetsTopicEnd(p.Partition)
		case -3: // the newest record: the last one written, or none
			rp.Offset = s.OffsetsTopicEnd(p.Partition) - 1
		default:
			rp.Offset = s.OffsetsTopicAt(p.Partition, p.Timestamp)
		}
	})
	return rp
}
