package server

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// txnBarrierTimeout bounds the wait for this broker's metadata replica to
// catch up with the coordinator before a transactional batch is refused.
const txnBarrierTimeout = 5 * time.Second

// txnSeq checks a produce request's transactional batches for one
// partition with the coordinator's state, as KIP-890 part 1 has the
// partition leader verify them, and returns the number of the
// transaction they belong to. The coordinator answered AddPartitionsToTxn
// once the metadata group committed it; this broker's replica may not
// have applied it yet, so a refusal first waits for a read barrier.
func (srv *Server) txnSeq(r *request, req *kmsg.ProduceRequest, topic string, index int32, batches [][]byte) (int64, *kerr.Error) {
	if err := r.onTxn(srv, *req.TransactionID); err != nil {
		return 0, err
	}
	pid, epoch, ok := partition.TransactionalProducer(batches)
	if !ok {
		return 0, kerr.InvalidRecord // a transactional request of other batches
	}
	check := func() (int64, error) {
		var seq int64
		var err error
		srv.Meta.Read(func(s *meta.State) { seq, err = s.TxnWrite(pid, epoch, topic, index) })
		return seq, err
	}
	seq, err := check()
	if err != nil {
		ctx, cancel := context.WithTimeout(srv.ctx, txnBarrierTimeout)
		_, berr := srv.Raft.SyncRead(ctx, meta.MetadataShard, nil)
		cancel()
		if berr != nil {
			return 0, kerr.NotEnoughReplicas // the metadata group has no quorum: a retriable answer
		}
		seq, err = check()
	}
	var ke *kerr.Error
	if err != nil && errors.As(err, &ke) {
		return 0, ke
	}
	return seq, nil
}
