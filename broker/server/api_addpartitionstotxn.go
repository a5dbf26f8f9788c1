package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// AddPartitionsToTxn v0-v3, the producer's form: v2 answers
// PRODUCER_FENCED; v3 flexible. v4+ (KIP-890, the brokers' batched and
// verify-only form) is not served: partition leaders here read the
// coordinator's state from their own metadata replica.
func init() { register(kmsg.AddPartitionsToTxn, 0, 3, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	add := &meta.AddToTxn{ID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch,
		Partitions: map[string][]int32{}, NowMs: time.Now().UnixMilli()}
	// Kafka adds all or nothing: a partition it refuses fails the others
	// with OPERATION_NOT_ATTEMPTED.
	refused := map[string]map[int32]int16{}
	if err := r.onTxn(srv, req.TransactionalID); err != nil {
		refused[""] = map[int32]int16{-1: err.Code}
	}
	for _, t := range req.Topics {
		denied := r.onTopic(srv, kmsg.ACLOperationWrite, t.Topic)
		for _, p := range t.Partitions {
			code := int16(0)
			if denied != nil {
				code = denied.Code
			} else if _, err := srv.partitionFor(t.Topic, p); err != nil {
				code = err.Code
			}
			if code != 0 {
				if refused[t.Topic] == nil {
					refused[t.Topic] = map[int32]int16{}
				}
				refused[t.Topic][p] = code
			}
			add.Partitions[t.Topic] = append(add.Partitions[t.Topic], p)
		}
	}
	all := int16(0)
	if len(refused) == 0 {
		_, err := srv.proposeTxn(&meta.Command{AddToTxn: add})
		all = txnErr(err, req.Version, 2)
	} else if c, ok := refused[""]; ok {
		all = c[-1]
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, all
			if len(refused) > 0 && all == 0 {
				rp.ErrorCode = kerr.OperationNotAttempted.Code
				if c, ok := refused[t.Topic][p]; ok {
					rp.ErrorCode = c
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
