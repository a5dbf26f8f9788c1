package server

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// What the transaction coordinator's handlers share: the metadata
// leader coordinates every transactional id, as it does every group
// (docs/design/transactions.md).

// DefaultTransactionMaxTimeout is Kafka's transaction.max.timeout.ms
// default.
const DefaultTransactionMaxTimeout = 15 * time.Minute

// txnMaxTimeout is the longest transaction timeout a producer may ask for.
func (srv *Server) txnMaxTimeout() time.Duration {
	if srv.cfg.TransactionMaxTimeout > 0 {
		return srv.cfg.TransactionMaxTimeout
	}
	return DefaultTransactionMaxTimeout
}

// transactionVersionFeature is the feature clients read (KIP-890): at
// level 2 they skip AddPartitionsToTxn and AddOffsetsToTxn, and every
// EndTxn gives them a new epoch.
const transactionVersionFeature = "transaction.version"

// transactionVersion is the cluster's transaction.version: 2 once every
// broker serves KIP-890 part 2, 1 with transactions only (partition
// leaders verify every transactional batch with the coordinator's state,
// part 1), 0 during an upgrade from a version without them.
func (srv *Server) transactionVersion() int16 {
	var v1, v2 bool
	srv.Meta.Read(func(s *meta.State) {
		v1, v2 = s.AllBrokersHave(meta.FeatureTransactions), s.AllBrokersHave(meta.FeatureTransactionsV2)
	})
	switch {
	case v1 && v2:
		return 2
	case v1:
		return 1
	}
	return 0
}

// txnProposeTimeout bounds a coordinator's proposal.
const txnProposeTimeout = 10 * time.Second

// proposeTxn proposes a transaction command on the coordinator. Another
// broker, or a coordinator that lost the metadata group meanwhile,
// answers NOT_COORDINATOR, so that the client finds the new one. A
// command refused because the id's last transaction is still writing its
// markers waits for them (settled) and is proposed again.
func (srv *Server) proposeTxn(cmd *meta.Command) (meta.Outcome, *kerr.Error) {
	if !srv.isCoordinator() {
		return meta.Outcome{}, kerr.NotCoordinator
	}
	all := false
	srv.Meta.Read(func(s *meta.State) { all = s.AllBrokersHave(meta.FeatureTransactions) })
	if !all {
		// A broker of an older version would refuse the partitions'
		// transactional commands (a rolling upgrade).
		return meta.Outcome{}, kerr.CoordinatorNotAvailable
	}
	return srv.settled(cmd, func(ctx context.Context) (meta.Outcome, *kerr.Error) {
		out, err := srv.Propose(ctx, cmd)
		if err != nil {
			return meta.Outcome{}, kerr.NotCoordinator
		}
		var ke *kerr.Error
		if out.Err != nil && !errors.As(out.Err, &ke) {
			return out, kerr.UnknownServerError
		}
		return out, ke
	})
}

// concurrentWait bounds how long a transactional command waits for the
// markers of the id's last transaction before the client is told
// CONCURRENT_TRANSACTIONS. Markers take milliseconds; a client's retry
// backoff (franz-go's starts at 250 ms) would take far longer, and every
// transaction's first write after a commit would pay it (KIP-890 part 2
// has Kafka's brokers retry alike).
const concurrentWait = 5 * time.Second

// settled runs propose, and again each time the command's transactional
// id has no transaction ending any more, while it answers
// CONCURRENT_TRANSACTIONS, for up to concurrentWait.
func (srv *Server) settled(cmd *meta.Command, propose func(context.Context) (meta.Outcome, *kerr.Error)) (meta.Outcome, *kerr.Error) {
	ctx, cancel := context.WithTimeout(srv.ctx, txnProposeTimeout)
	defer cancel()
	deadline := time.Now().Add(concurrentWait)
	for {
		out, err := propose(ctx)
		if err != kerr.ConcurrentTransactions || !srv.awaitNotEnding(cmd.TxnID(), deadline) {
			return out, err
		}
	}
}

// awaitNotEnding waits until this broker's metadata replica shows no
// transaction of id ending, and reports whether it did before deadline.
func (srv *Server) awaitNotEnding(id string, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		changed := srv.Meta.Changed()
		ending := false
		srv.Meta.Read(func(s *meta.State) {
			t, ok := s.Transaction(id)
			ending = ok && t.Ending()
		})
		if !ending {
			return true
		}
		select {
		case <-changed:
		case <-timer.C:
			return false
		case <-srv.ctx.Done():
			return false
		}
	}
}

// txnErr is the error a transactional request of version v answers:
// versions before fencedSince knew no PRODUCER_FENCED (KIP-588) and are
// told INVALID_PRODUCER_EPOCH, as Kafka tells them.
func txnErr(err *kerr.Error, v, fencedSince int16) int16 {
	if err == nil {
		return 0
	}
	if err == kerr.ProducerFenced && v < fencedSince {
		return kerr.InvalidProducerEpoch.Code
	}
	return err.Code
}

// onTxn is the authorizer's answer for a transactional id: WRITE on it,
// Kafka's rule for every transactional request.
func (r *request) onTxn(srv *Server, id string) *kerr.Error {
	if r.allowed(srv, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id) {
		return nil
	}
	return kerr.TransactionalIDAuthorizationFailed
}
