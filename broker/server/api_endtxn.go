package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// EndTxn v0-v4: v2 answers PRODUCER_FENCED; v3 flexible. The answer
// comes once the decision is in the metadata; the markers follow
// (broker/txn). v5 (KIP-890 part 2, a new epoch per transaction) is not
// served yet.
func init() { register(kmsg.EndTxn, 0, 4, handleEndTxn) }

func handleEndTxn(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if err := r.onTxn(srv, req.TransactionalID); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	_, err := srv.proposeTxn(&meta.Command{EndTxn: &meta.EndTxn{ID: req.TransactionalID, ProducerID: req.ProducerID,
		Epoch: req.ProducerEpoch, Commit: req.Commit, NowMs: time.Now().UnixMilli()}})
	resp.ErrorCode = txnErr(err, req.Version, 2)
	return resp, nil
}
