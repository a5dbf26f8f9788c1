package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// EndTxn v0-v5: v2 answers PRODUCER_FENCED; v3 flexible; v5 (KIP-890
// part 2) gives the producer a new epoch at every end and answers it, so
// that a late write or marker of this transaction cannot land in the
// next. The answer comes once the decision is in the metadata; the
// markers follow (broker/txn).
func init() { register(kmsg.EndTxn, 0, 5, handleEndTxn) }

func handleEndTxn(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if err := r.onTxn(srv, req.TransactionalID); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	out, err := srv.proposeTxn(&meta.Command{EndTxn: &meta.EndTxn{ID: req.TransactionalID, ProducerID: req.ProducerID,
		Epoch: req.ProducerEpoch, Commit: req.Commit, Bump: req.Version >= 5, NowMs: time.Now().UnixMilli()}})
	resp.ErrorCode = txnErr(err, req.Version, 2)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if err == nil {
		resp.ProducerID, resp.ProducerEpoch = out.ProducerID, out.Epoch
	}
	return resp, nil
}
