package server

import (
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// ListTransactions v0-v2 (KIP-664, `kafka-transactions.sh list`, asked of
// every broker): the transactional ids the caller may describe, filtered by state, producer
// id, v1's time open (KIP-994) and v2's id pattern (a Java regular
// expression; Go's RE2 reads the common ones alike).
func init() { register(kmsg.ListTransactions, 0, 2, handleListTransactions) }

// txnStates are the states a filter may name.
var txnStates = []meta.TxnState{meta.TxnEmpty, meta.TxnOngoing, meta.TxnPrepareCommit, meta.TxnPrepareAbort,
	meta.TxnCompleteCommit, meta.TxnCompleteAbort}

func handleListTransactions(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	if !srv.isCoordinator() {
		// Every broker is asked, each for the ids it coordinates: here,
		// the metadata leader all of them, the others none.
		return resp, nil
	}
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile(*req.TransactionalIDPattern); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
	}
	states := map[meta.TxnState]bool{}
	for _, f := range req.StateFilters {
		if !slices.Contains(txnStates, meta.TxnState(f)) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
			continue
		}
		states[meta.TxnState(f)] = true
	}
	now := time.Now().UnixMilli()
	srv.Meta.Read(func(s *meta.State) {
		for _, id := range s.TransactionIDs() {
			t, _ := s.Transaction(id)
			switch {
			case len(req.StateFilters) > 0 && !states[t.State],
				len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.ProducerID),
				req.DurationFilterMillis >= 0 && (!t.Open() && !t.Ending() || now-t.StartedMs < req.DurationFilterMillis),
				pattern != nil && !pattern.MatchString(id),
				!r.allowed(srv, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id):
				continue
			}
			resp.TransactionStates = append(resp.TransactionStates, kmsg.ListTransactionsResponseTransactionState{
				TransactionalID: id, ProducerID: t.ProducerID, TransactionState: string(t.State)})
		}
	})
	return resp, nil
}
