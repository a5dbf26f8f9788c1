package server

import (
	"context"
	"errors"
	"sync"
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
// Produce v12 under transaction.version 2 (KIP-890 part 2) adds the
// partition to the transaction itself, beginning it if none is open; the
// add needs no barrier.
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
	implicit := req.Version >= 12 && srv.transactionVersion() >= 2
	// addable: what an add decides, the partition not in the transaction
	// or an epoch this replica has not applied yet.
	addable := func(err error) bool {
		return errors.Is(err, kerr.InvalidTxnState) || errors.Is(err, meta.ErrEpochAhead)
	}
	switch {
	case implicit && addable(err):
		// The add is proposed at once, with no read barrier before or
		// after: the metadata group decides it after everything committed
		// before it (an epoch this replica has not applied yet too), and
		// the proposal returns once this replica applied it. Two barriers
		// per partition were most of a small transaction's time
		// (docs/benchmarks.md, "Transactions"). An add that failed (no
		// metadata quorum, say) may have left the replica where it was:
		// its error, retriable, answers then, not the check's.
		aerr := srv.addImplicitly(*req.TransactionID, pid, epoch, topic, index)
		if seq, err = check(); aerr != nil && addable(err) {
			return 0, aerr
		}
	case err != nil:
		if berr := srv.metaBarrier(); berr != nil {
			return 0, berr
		}
		seq, err = check()
		if errors.Is(err, kerr.InvalidTxnState) && implicit {
			if aerr := srv.addImplicitly(*req.TransactionID, pid, epoch, topic, index); aerr != nil {
				return 0, aerr
			}
			seq, err = check()
		}
	}
	var ke *kerr.Error
	if err != nil && errors.As(err, &ke) {
		return 0, ke
	}
	return seq, nil
}

// metaBarrier waits until this broker's metadata replica has applied what
// the metadata group committed before now.
func (srv *Server) metaBarrier() *kerr.Error {
	return srv.metaBarriers.wait(func() *kerr.Error {
		ctx, cancel := context.WithTimeout(srv.ctx, txnBarrierTimeout)
		defer cancel()
		if _, err := srv.Raft.SyncRead(ctx, meta.MetadataShard, nil); err != nil {
			return kerr.NotEnoughReplicas // the metadata group has no quorum: a retriable answer
		}
		return nil
	})
}

// barriers runs read barriers one at a time, and every caller that comes
// while one runs joins the next, which starts after they came and so sees
// what they must. A fenced producer hammering a partition with refused
// writes then costs one ReadIndex per round trip, not one per request.
type barriers struct {
	mu      sync.Mutex
	running sync.Mutex
	next    *barrier // not started yet; nil when none is waiting
}

type barrier struct {
	done chan struct{}
	err  *kerr.Error
}

func (bs *barriers) wait(run func() *kerr.Error) *kerr.Error {
	bs.mu.Lock()
	b := bs.next
	if b == nil {
		b = &barrier{done: make(chan struct{})}
		bs.next = b
		go func() {
			bs.running.Lock()
			defer bs.running.Unlock()
			bs.mu.Lock()
			bs.next = nil // later callers wait for the barrier after this one
			bs.mu.Unlock()
			b.err = run()
			close(b.done)
		}()
	}
	bs.mu.Unlock()
	<-b.done
	return b.err
}

// addImplicitly adds a partition to the producer's transaction for a
// Produce v12, as the coordinator's AddPartitionsToTxn would. The
// proposal returns once this broker's replica applied it, so the
// replica's state then holds the add and everything before it.
func (srv *Server) addImplicitly(id string, pid int64, epoch int16, topic string, index int32) *kerr.Error {
	cmd := &meta.Command{AddToTxn: &meta.AddToTxn{ID: id, ProducerID: pid, Epoch: epoch,
		Partitions: map[string][]int32{topic: {index}}, NowMs: time.Now().UnixMilli()}}
	_, err := srv.settled(cmd, func(ctx context.Context) (meta.Outcome, *kerr.Error) {
		out, err := srv.Propose(ctx, cmd)
		var ke *kerr.Error
		switch {
		case err != nil:
			return out, kerr.NotEnoughReplicas // no metadata quorum: the client retries
		case out.Err != nil && errors.As(out.Err, &ke):
			return out, ke
		case out.Err != nil:
			return out, kerr.UnknownServerError
		}
		return out, nil
	})
	return err
}
