package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// AddOffsetsToTxn v0-v3: v2 answers PRODUCER_FENCED; v3 flexible. The
// group's offsets are kept with the transaction (meta/txn.go), so adding
// the group is all it takes.
func init() { register(kmsg.AddOffsetsToTxn, 0, 3, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if err := r.onTxn(srv, req.TransactionalID); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if err := r.onGroup(srv, kmsg.ACLOperationRead, req.Group); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	_, err := srv.proposeTxn(&meta.Command{AddToTxn: &meta.AddToTxn{ID: req.TransactionalID, ProducerID: req.ProducerID,
		Epoch: req.ProducerEpoch, Group: req.Group, NowMs: time.Now().UnixMilli()}})
	resp.ErrorCode = txnErr(err, req.Version, 2)
	return resp, nil
}
