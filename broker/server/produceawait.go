package server

import (
	"errors"
	"reflect"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/internal/kafkaerr"
	"github.com/raftka/raftka/broker/partition"
)

// How a Produce waits for its partitions' Raft commits, and times how far
// apart they come.

// awaitProduced waits for each partition's proposal and fills its part of
// the response.
func (srv *Server) awaitProduced(pending []pendingProduce) {
	early, spread := awaitInTurn(pending)
	if spread >= 0 {
		srv.Metrics.Stage(stageCommitSpread, spread)
	}
	for i, p := range pending {
		var res dragonboat.RequestResult
		ok := early[i] != nil
		if ok {
			res = *early[i]
		} else {
			res, ok = srv.awaitProposal(p)
		}
		switch {
		case !ok:
			p.rp.ErrorCode = kerr.NotLeaderForPartition.Code
		case res.Completed():
			out := partition.DecodeResult(res.GetResult())
			switch {
			case errors.Is(out.Err, kerr.OutOfOrderSequenceNumber):
				srv.Metrics.OutOfOrder(p.topic)
			case out.Duplicate:
				srv.Metrics.Duplicate(p.topic)
			}
			if out.Err != nil {
				p.rp.ErrorCode = kafkaerr.Code(out.Err)
			} else {
				if !out.Duplicate {
					srv.Metrics.ProducedTo(p.topic, p.bytes, p.records)
				}
				p.rp.BaseOffset, p.rp.LogStartOffset, p.rp.LogAppendTime = out.BaseOffset, out.LogStartOffset, p.appendTime
			}
		case res.Timeout():
			p.rp.ErrorCode = kerr.RequestTimedOut.Code
		default: // dropped, aborted or terminated: leadership moved
			p.rp.ErrorCode = kerr.NotLeaderForPartition.Code
		}
		p.rs.Release()
	}
}

// awaitInTurn takes the results of a request's partitions in the order
// they come, to time how far apart its groups commit (the commit_spread
// stage: a request waits for its slowest group). It returns what came
// and the spread between the first and the last result; it stops at a
// partition whose leadership moved, leaving the rest to awaitProposal,
// and then, or for a request of one partition, the spread is -1.
func awaitInTurn(pending []pendingProduce) ([]*dragonboat.RequestResult, time.Duration) {
	if len(pending) < 2 {
		return make([]*dragonboat.RequestResult, len(pending)), -1
	}
	results, deposed := make([]<-chan dragonboat.RequestResult, len(pending)), make([]<-chan struct{}, len(pending))
	for i, p := range pending {
		results[i], deposed[i] = p.rs.ResultC(), p.deposed
	}
	return firstToLast(results, deposed)
}

// firstToLast is awaitInTurn on the partitions' result channels and the
// channels that close when their leadership moves.
func firstToLast(results []<-chan dragonboat.RequestResult, deposed []<-chan struct{}) ([]*dragonboat.RequestResult, time.Duration) {
	got := make([]*dragonboat.RequestResult, len(results))
	cases := make([]reflect.SelectCase, 0, 2*len(results))
	for i := range results {
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(results[i])},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deposed[i])})
	}
	var first time.Time
	for n := range results {
		chosen, v, _ := reflect.Select(cases)
		if chosen%2 == 1 {
			return got, -1
		}
		res := v.Interface().(dragonboat.RequestResult)
		got[chosen/2] = &res
		cases[chosen].Chan = reflect.Value{} // a zero channel is never chosen again
		if n == 0 {
			first = time.Now()
		}
	}
	return got, time.Since(first)
}

// awaitProposal waits for a proposed batch's outcome. If this broker stops
// leading the partition meanwhile, it waits stepDownGrace more and then
// gives up (false): the batch then commits only if the new
// leader got it, and the client retries there, where an idempotent
// producer's retry is recognised. Kafka likewise answers
// NOT_LEADER_OR_FOLLOWER to the writes a leader has pending when it becomes
// a follower. Without it, a leader cut off from its followers would hold
// its producers until their request timeout (Java's is 30 s). The grace
// lets a deposed leader still acknowledge what the new leader commits, as
// after a leadership transfer, where a producer that is not idempotent
// would otherwise write its retry twice.
func (srv *Server) awaitProposal(p pendingProduce) (dragonboat.RequestResult, bool) {
	select {
	case res := <-p.rs.ResultC():
		return res, true
	case <-p.deposed:
	}
	grace := time.NewTimer(srv.cfg.StepDownGrace)
	defer grace.Stop()
	select {
	case res := <-p.rs.ResultC():
		return res, true
	case <-grace.C:
		// Not released: Dragonboat may still complete it.
		return dragonboat.RequestResult{}, false
	}
}
