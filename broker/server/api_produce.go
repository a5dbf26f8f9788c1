package server

import (
	"errors"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/partition"
)

// Produce v3-v13: RecordBatch v2 only; v9+ flexible; v10+ names the current
// leader on NOT_LEADER_OR_FOLLOWER (KIP-951); v12 changes nothing without
// transactions; v13 names topics by id.
func init() { register(kmsg.Produce, 3, 13, handleProduce) }

const maxProduceTimeout = 30 * time.Second

type pendingProduce struct {
	rp         *kmsg.ProduceResponseTopicPartition
	rs         *dragonboat.RequestState
	appendTime int64 // the log append time it was stamped with, or -1
}

// handleProduce proposes every partition's batches at once, in request
// order, and answers when Raft has committed and applied them: committed
// means a majority of replicas fsynced the entry in their Raft logs.
func handleProduce(b *Broker, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	timeout := min(max(time.Duration(req.TimeoutMillis)*time.Millisecond, 100*time.Millisecond), maxProduceTimeout)
	var pending []pendingProduce
	names := make([]string, 0, len(req.Topics)) // per response topic, for the leader hints
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, known := t.Topic, true
		if req.Version >= 13 {
			name, known = b.topicName(t.TopicID)
		}
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for i, p := range t.Partitions {
			rp := &rt.Partitions[i]
			rp.Default()
			rp.Partition = p.Partition
			if !known {
				rp.ErrorCode = kerr.UnknownTopicID.Code
				continue
			}
			rs, appendTime, err := b.proposeProduce(req, name, p, timeout)
			if err != nil {
				rp.ErrorCode = err.Code
				continue
			}
			pending = append(pending, pendingProduce{rp: rp, rs: rs, appendTime: appendTime})
		}
		resp.Topics = append(resp.Topics, rt)
		names = append(names, name)
	}
	if len(pending) == 0 {
		b.addProduceLeaderHints(resp, names)
		return resp, nil
	}
	r.deferred = func() kmsg.Response {
		for _, p := range pending {
			res := <-p.rs.ResultC()
			switch {
			case res.Completed():
				out := partition.DecodeResult(res.GetResult())
				if out.Err != nil {
					p.rp.ErrorCode = errCode(out.Err)
				} else {
					p.rp.BaseOffset, p.rp.LogStartOffset, p.rp.LogAppendTime = out.BaseOffset, out.LogStartOffset, p.appendTime
				}
			case res.Timeout():
				p.rp.ErrorCode = kerr.RequestTimedOut.Code
			default: // dropped, aborted or terminated: leadership moved
				p.rp.ErrorCode = kerr.NotLeaderForPartition.Code
			}
			p.rs.Release()
		}
		b.metrics.produced.Inc()
		b.addProduceLeaderHints(resp, names)
		return resp
	}
	return nil, nil
}

// addProduceLeaderHints names the current leader of every partition answered
// with NOT_LEADER_OR_FOLLOWER, and that leader's endpoint.
func (b *Broker) addProduceLeaderHints(resp *kmsg.ProduceResponse, names []string) {
	listed := map[int32]bool{}
	for ti := range resp.Topics {
		rt, name := &resp.Topics[ti], names[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			h, ok := b.leaderHintFor(name, rp.Partition)
			if !ok {
				continue
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
			if !listed[h.leader] {
				listed[h.leader] = true
				resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: h.leader, Host: h.host, Port: h.port, Rack: h.rack})
			}
		}
	}
}

func errCode(err error) int16 { return kafkaError(err, kerr.UnknownServerError).Code }

// kafkaError is the Kafka error that err is or wraps, else otherwise.
func kafkaError(err error, otherwise *kerr.Error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return otherwise
}

// proposeProduce validates one partition's records and proposes them; it
// returns the log append time they will carry, or -1 for CreateTime.
func (b *Broker) proposeProduce(req *kmsg.ProduceRequest, topic string, p kmsg.ProduceRequestTopicPartition, timeout time.Duration) (*dragonboat.RequestState, int64, *kerr.Error) {
	if req.TransactionID != nil {
		return nil, -1, kerr.TransactionalIDAuthorizationFailed
	}
	rep, info, notLeader := b.leaderReplica(topic, p.Partition)
	if rep == nil && notLeader != nil {
		return nil, -1, notLeader
	}
	// Checked before leadership: a replica that lost its quorum has no
	// leader, and the precise answer is that replicas are missing.
	if req.Acks == -1 && len(b.inSyncReplicas(info.shard, info.replicas)) < info.minISR {
		return nil, -1, kerr.NotEnoughReplicas
	}
	if notLeader != nil {
		return nil, -1, notLeader
	}
	if b.diskFull() {
		return nil, -1, kerr.KafkaStorageError
	}
	batches, err := partition.SplitBatches(p.Records, info.maxMessage)
	if err != nil {
		return nil, -1, kafkaError(err, kerr.CorruptMessage)
	}
	if info.compacted {
		// Compaction keeps the newest record of each key; one without a
		// key could never be compacted away, so Kafka refuses it.
		if keyless, err := partition.KeylessRecord(batches); errors.Is(err, kgo.ErrMaxDecompress) {
			return nil, -1, kerr.MessageTooLarge
		} else if err != nil {
			return nil, -1, kerr.CorruptMessage
		} else if keyless {
			return nil, -1, kerr.InvalidRecord
		}
	}
	records, err := partition.Recompress(p.Records, batches, info.codec, info.maxMessage)
	if err != nil {
		return nil, -1, kafkaError(err, kerr.UnknownServerError)
	}
	var cmd []byte
	appendTime := int64(-1)
	if info.appendTime {
		appendTime = time.Now().UnixMilli()
		cmd = partition.ProduceAppendTimeCommand(b.term(info.shard), appendTime, records)
	} else {
		cmd = partition.ProduceCommand(b.term(info.shard), records)
	}
	deadline := time.Now().Add(timeout)
	for {
		rs, err := b.nh.Propose(b.nh.GetNoOPSession(info.shard), cmd, time.Until(deadline))
		if err == nil {
			return rs, appendTime, nil
		}
		// A busy shard pushes back; waiting here keeps later requests on
		// this connection behind this one, which keeps their order.
		if !errors.Is(err, dragonboat.ErrSystemBusy) || time.Now().After(deadline) {
			if errors.Is(err, dragonboat.ErrSystemBusy) || errors.Is(err, dragonboat.ErrTimeoutTooSmall) {
				return nil, -1, kerr.RequestTimedOut
			}
			return nil, -1, kerr.NotLeaderForPartition
		}
		b.metrics.busy.Inc()
		time.Sleep(2 * time.Millisecond)
	}
}
