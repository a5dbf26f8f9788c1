package server

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// DescribeTransactions v0 (KIP-664, `kafka-transactions.sh describe`):
// each transactional id's state, producer, timeout, start and the
// partitions its transaction has yet to end, as the coordinator holds
// them.
func init() { register(kmsg.DescribeTransactions, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	coordinating := srv.isCoordinator()
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		var txn meta.Transaction
		var known bool
		srv.Meta.Read(func(s *meta.State) { txn, known = s.Transaction(id) })
		switch {
		case !r.allowed(srv, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case !coordinating:
			st.ErrorCode = kerr.NotCoordinator.Code
		case !known:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			st.State, st.TimeoutMillis, st.ProducerID, st.ProducerEpoch = string(txn.State), txn.TimeoutMs, txn.ProducerID, txn.Epoch
			if txn.Open() || txn.Ending() {
				st.StartTimestamp = txn.StartedMs
			}
			// Of an ending transaction, the partitions still without
			// their markers, as Kafka lists them.
			for _, topic := range slices.Sorted(maps.Keys(txn.Partitions)) {
				parts := slices.DeleteFunc(slices.Clone(txn.Partitions[topic]), func(p int32) bool { return slices.Contains(txn.Written[topic], p) })
				if len(parts) > 0 {
					st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: topic, Partitions: parts})
				}
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
