package server

import (
	"errors"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/lni/dragonboat/v3"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// Produce v3-v13: RecordBatch v2 only; v9+ flexible; v10+ names the current
// leader on NOT_LEADER_OR_FOLLOWER (KIP-951); v12, under transaction.version
// 2, adds a transactional batch's partition to its transaction (KIP-890
// part 2, producetxn.go); v13 names topics by id.
func init() { register(kmsg.Produce, 3, 13, handleProduce) }

const maxProduceTimeout = 30 * time.Second

type pendingProduce struct {
	topic      string
	rp         *kmsg.ProduceResponseTopicPartition
	rs         *dragonboat.RequestState
	appendTime int64           // the log append time it was stamped with, or -1
	bytes      int             // the record batches' size as the producer sent them
	records    int             // how many records they hold
	deposed    <-chan struct{} // closes when this broker stops leading the partition
}

// handleProduce proposes every partition's batches at once, in request
// order, and answers when Raft has committed and applied them: committed
// means a majority of replicas fsynced the entry in their Raft logs.
func handleProduce(srv *Server, r *request) (kmsg.Response, error) {
	began := time.Now()
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
			name, known = srv.Meta.TopicName(t.TopicID)
		}
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		refresh := known && srv.tellGrowth(r.conn, name)
		for i, p := range t.Partitions {
			rp := &rt.Partitions[i]
			rp.Default()
			rp.Partition = p.Partition
			if !known {
				rp.ErrorCode = kerr.UnknownTopicID.Code
				continue
			}
			if name == meta.OffsetsTopic {
				// Kafka's answer to a client writing to an internal topic.
				rp.ErrorCode, rp.ErrorMessage = kerr.InvalidTopicException.Code, kmsg.StringPtr("Cannot append to internal topic "+name)
				continue
			}
			if err := r.onTopic(srv, kmsg.ACLOperationWrite, name); err != nil {
				rp.ErrorCode = err.Code
				continue
			}
			if refresh {
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				continue
			}
			pp, err := srv.proposeProduce(r, req, name, p, timeout)
			if err != nil {
				rp.ErrorCode = err.Code
				continue
			}
			pp.topic, pp.rp = name, rp
			pending = append(pending, pp)
		}
		resp.Topics = append(resp.Topics, rt)
		names = append(names, name)
	}
	if len(pending) == 0 {
		srv.addProduceLeaderHints(resp, names, r.conn.listener.Name)
		return resp, nil
	}
	proposed := time.Now()
	srv.Metrics.Stage(stageRead, began.Sub(r.arrived))
	srv.Metrics.Stage(stagePropose, proposed.Sub(began))
	r.deferred = func() kmsg.Response {
		srv.awaitProduced(pending)
		answered := time.Now()
		srv.Metrics.Stage(stageCommit, answered.Sub(proposed))
		r.written = func() { srv.Metrics.Stage(stageRespond, time.Since(answered)) }
		srv.Metrics.Produced()
		srv.addProduceLeaderHints(resp, names, r.conn.listener.Name)
		return resp
	}
	return nil, nil
}

// addProduceLeaderHints names the current leader of every partition answered
// with NOT_LEADER_OR_FOLLOWER, and that leader's endpoint.
func (srv *Server) addProduceLeaderHints(resp *kmsg.ProduceResponse, names []string, listener string) {
	listed := map[int32]bool{}
	for ti := range resp.Topics {
		rt, name := &resp.Topics[ti], names[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			h, ok := srv.leaderHintFor(name, rp.Partition, listener)
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

// tellGrowth reports whether the connection's first produce to topic
// since an ordered growth of it became visible is to be answered
// NOT_LEADER_OR_FOLLOWER, once per connection and growth: the producer
// then refreshes its metadata and places its next records by the new
// partition count, instead of when its metadata expires, minutes later
// (docs/design/ordered-growth.md). It retries the refused batches where
// they were, and they are stale records then. The leader hints of KIP-951
// name this broker, which hints nothing (leaderHintFor), so the client
// refreshes in full.
func (srv *Server) tellGrowth(c *clientConn, topic string) bool {
	seq := srv.Meta.HeldGrowth(topic)
	if seq == 0 || c.toldGrowth[topic] == seq {
		return false
	}
	if c.toldGrowth == nil {
		c.toldGrowth = map[string]int{}
	}
	c.toldGrowth[topic] = seq
	return true
}

// proposeProduce validates one partition's records and proposes them; the
// pending proposal has the log append time they will carry, or -1 for
// CreateTime.
func (srv *Server) proposeProduce(r *request, req *kmsg.ProduceRequest, topic string, p kmsg.ProduceRequestTopicPartition, timeout time.Duration) (pendingProduce, *kerr.Error) {
	rep, info, notLeader := srv.leaderReplica(topic, p.Partition)
	if rep == nil && notLeader != nil {
		return pendingProduce{}, notLeader
	}
	// Checked before leadership: a replica that lost its quorum has no
	// leader, and where this broker stands in (currentLeader) the precise
	// answer is that replicas are missing. Elsewhere clients are to look
	// for the leader.
	if req.Acks == -1 && info.Leader == srv.cfg.ID && len(srv.Replicas.InSyncReplicas(info.Shard, info.Replicas)) < info.MinISR {
		return pendingProduce{}, kerr.NotEnoughReplicas
	}
	if notLeader != nil {
		return pendingProduce{}, notLeader
	}
	if srv.diskFull() {
		return pendingProduce{}, kerr.KafkaStorageError
	}
	batches, err := partition.SplitBatches(p.Records, info.MaxMessage)
	if err != nil {
		return pendingProduce{}, kafkaerr.Of(err, kerr.CorruptMessage)
	}
	if info.Compacted {
		// Compaction keeps the newest record of each key; one without a
		// key could never be compacted away, so Kafka refuses it.
		if keyless, err := partition.KeylessRecord(batches); errors.Is(err, kgo.ErrMaxDecompress) {
			return pendingProduce{}, kerr.MessageTooLarge
		} else if err != nil {
			return pendingProduce{}, kerr.CorruptMessage
		} else if keyless {
			return pendingProduce{}, kerr.InvalidRecord
		}
	}
	txnSeq := int64(-1)
	if req.TransactionID != nil {
		seq, err := srv.txnSeq(r, req, topic, p.Partition, batches)
		if err != nil {
			return pendingProduce{}, err
		}
		txnSeq = seq
	}
	records, err := partition.Recompress(p.Records, batches, info.codec, info.MaxMessage)
	if err != nil {
		return pendingProduce{}, kafkaerr.Of(err, kerr.UnknownServerError)
	}
	appendTime := int64(-1)
	if info.AppendTime {
		appendTime = time.Now().UnixMilli()
	}
	term := srv.Replicas.Term(info.Shard)
	var cmd []byte
	switch {
	case txnSeq >= 0:
		cmd = partition.ProduceTxnCommand(term, txnSeq, appendTime, records)
	case info.AppendTime:
		cmd = partition.ProduceAppendTimeCommand(term, appendTime, records)
	default:
		cmd = partition.ProduceCommand(term, records)
	}
	deposed := srv.Replicas.Deposed(info.Shard) // before proposing, to see a step-down that follows
	deadline := time.Now().Add(timeout)
	for {
		rs, err := srv.Raft.Propose(srv.Raft.GetNoOPSession(info.Shard), cmd, time.Until(deadline))
		if err == nil {
			return pendingProduce{rs: rs, appendTime: appendTime, deposed: deposed, bytes: len(p.Records), records: partition.RecordCount(batches)}, nil
		}
		// A busy shard pushes back; waiting here keeps later requests on
		// this connection behind this one, which keeps their order.
		if !errors.Is(err, dragonboat.ErrSystemBusy) || time.Now().After(deadline) {
			if errors.Is(err, dragonboat.ErrSystemBusy) || errors.Is(err, dragonboat.ErrTimeoutTooSmall) {
				return pendingProduce{}, kerr.RequestTimedOut
			}
			return pendingProduce{}, kerr.NotLeaderForPartition
		}
		srv.Metrics.Busy()
		time.Sleep(2 * time.Millisecond)
	}
}
