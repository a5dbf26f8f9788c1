package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeProducers v0 (KIP-664, `kafka-transactions.sh describe-producers`):
// the idempotent producers a partition's leader remembers, with their epoch,
// last sequence and last timestamp, and where the producer's open
// transaction on the partition begins (CurrentTxnStartOffset, -1 for
// none).
func init() { register(kmsg.DescribeProducers, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		denied := r.onTopic(srv, kmsg.ACLOperationRead, t.Topic)
		for _, index := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = index
			if denied != nil {
				rp.ErrorCode = denied.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rep, _, err := srv.leaderReplica(t.Topic, index)
			if err != nil {
				rp.ErrorCode = err.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			for _, p := range rep.StateMachine().Log().Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp = p.ID, int32(p.Epoch), p.LastSequence, p.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, p.TxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
