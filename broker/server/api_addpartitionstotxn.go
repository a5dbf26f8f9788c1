package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// AddPartitionsToTxn v0-v5. v0-v3 are the producer's form: v2 answers
// PRODUCER_FENCED; v3 flexible. v4+ are the brokers' form (KIP-890): it
// batches transactions, may only verify that partitions are in one, and
// needs CLUSTER_ACTION; v5 changes no field. Raftka's own
// partition leaders verify against their metadata replica instead, but a
// tool or a Kafka broker in front of us may send it.
func init() { register(kmsg.AddPartitionsToTxn, 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 {
		srv.addPartitionsBatched(r, req, resp)
		return resp, nil
	}
	asked := txnPartitions{}
	for _, t := range req.Topics {
		asked[t.Topic] = append(asked[t.Topic], t.Partitions...)
	}
	codes := srv.addPartitions(r, req.TransactionalID, req.ProducerID, req.ProducerEpoch, asked, req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes.of(t.Topic, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// addPartitionsBatched answers the brokers' form, transaction by
// transaction.
func (srv *Server) addPartitionsBatched(r *request, req *kmsg.AddPartitionsToTxnRequest, resp *kmsg.AddPartitionsToTxnResponse) {
	if err := r.onCluster(srv, kmsg.ACLOperationClusterAction); err != nil {
		resp.ErrorCode = err.Code
		return
	}
	for _, tx := range req.Transactions {
		asked := txnPartitions{}
		for _, t := range tx.Topics {
			asked[t.Topic] = append(asked[t.Topic], t.Partitions...)
		}
		var codes txnCodes
		if tx.VerifyOnly {
			codes = srv.verifyInTxn(tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, asked)
		} else {
			codes = srv.addPartitions(r, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, asked, req.Version)
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for _, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes.of(t.Topic, p)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
}

// txnPartitions are partitions by topic.
type txnPartitions map[string][]int32

// txnCodes answer partitions: all for every one, unless a partition has
// its own code in each.
type txnCodes struct {
	all  int16
	each map[string]map[int32]int16
}

func (c txnCodes) of(topic string, p int32) int16 {
	if code, ok := c.each[topic][p]; ok {
		return code
	}
	return c.all
}

func (c *txnCodes) set(topic string, p int32, code int16) {
	if c.each == nil {
		c.each = map[string]map[int32]int16{}
	}
	if c.each[topic] == nil {
		c.each[topic] = map[int32]int16{}
	}
	c.each[topic][p] = code
}

// addPartitions adds partitions to the producer's transaction. Kafka adds
// all or nothing: a partition it refuses fails the others with
// OPERATION_NOT_ATTEMPTED.
func (srv *Server) addPartitions(r *request, id string, producerID int64, epoch int16, asked txnPartitions, v int16) txnCodes {
	if err := r.onTxn(srv, id); err != nil {
		return txnCodes{all: err.Code}
	}
	add := &meta.AddToTxn{ID: id, ProducerID: producerID, Epoch: epoch, Partitions: map[string][]int32{}, NowMs: time.Now().UnixMilli()}
	var codes txnCodes
	for topic, parts := range asked {
		denied := r.onTopic(srv, kmsg.ACLOperationWrite, topic)
		for _, p := range parts {
			if denied != nil {
				codes.set(topic, p, denied.Code)
			} else if _, err := srv.partitionFor(topic, p); err != nil {
				codes.set(topic, p, err.Code)
			}
			add.Partitions[topic] = append(add.Partitions[topic], p)
		}
	}
	if codes.each != nil {
		codes.all = kerr.OperationNotAttempted.Code
		return codes
	}
	_, err := srv.proposeTxn(&meta.Command{AddToTxn: add})
	return txnCodes{all: txnErr(err, v, 2)}
}

// verifyInTxn answers whether each partition is in the producer's open
// transaction, from this broker's metadata replica after a read barrier,
// as the coordinator would.
func (srv *Server) verifyInTxn(id string, producerID int64, epoch int16, asked txnPartitions) txnCodes {
	if !srv.isCoordinator() {
		return txnCodes{all: kerr.NotCoordinator.Code}
	}
	ctx, cancel := context.WithTimeout(srv.ctx, txnProposeTimeout)
	defer cancel()
	if _, err := srv.Raft.SyncRead(ctx, meta.MetadataShard, nil); err != nil {
		return txnCodes{all: kerr.NotCoordinator.Code}
	}
	var codes txnCodes
	srv.Meta.Read(func(s *meta.State) {
		for topic, parts := range asked {
			for _, p := range parts {
				if err := s.TxnHolds(id, producerID, epoch, topic, p); err != nil {
					codes.set(topic, p, err.(*kerr.Error).Code)
				}
			}
		}
	})
	return codes
}
