package server

import (
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
	"github.com/raftka/raftka/broker/replica"
)

// Fetch v4-v18: by topic name up to v12, by topic id from v13; no fetch
// sessions, so every response is a full one (SessionID 0); v12 flexible;
// NOT_LEADER_OR_FOLLOWER names the current leader (v12+) and its endpoint
// (v16+, KIP-951); v15, v17 and v18 change only what followers send. A
// fetch with a replica id is another broker catching a replica up, which
// any replica of the partition answers (see catchup.go).
func init() { register(kmsg.Fetch, 4, 18, handleFetch) }

const maxFetchWait = 30 * time.Second

// handleFetch long-polls: it answers once MinBytes are available, any
// partition has an error, or MaxWait has passed.
func handleFetch(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.FetchRequest)
	deadline := time.Now().Add(min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxFetchWait))
	names := fetchTopicNames(srv, req)
	denied := fetchDenied(srv, r, req, names)
	r.deferred = func() kmsg.Response {
		for {
			resp, bytes, failed, wake := srv.fetchOnce(req, names, r.conn.listener.Name, denied)
			if failed || bytes >= int(req.MinBytes) || !time.Now().Before(deadline) {
				if req.ReplicaID >= 0 || req.ReplicaState.ID >= 0 {
					// A replica catching up: leader.replication.throttled.rate.
					_ = srv.Replicas.WaitLeaderThrottle(srv.ctx, bytes)
				}
				srv.countFetched(names, resp)
				return resp
			}
			waitAny(wake, time.Until(deadline), srv.ctx.Done())
		}
	}
	return nil, nil
}

// countFetched counts the record bytes a fetch answer carries, by topic;
// its topics are the request's, in order (fetchOnce).
func (srv *Server) countFetched(names []string, resp *kmsg.FetchResponse) {
	for i, t := range resp.Topics {
		n := 0
		for _, p := range t.Partitions {
			n += len(p.RecordBatches)
		}
		if n > 0 && names[i] != "" {
			srv.Metrics.Fetched(names[i], n)
		}
	}
}

// fetchDenied is the authorizer's answer for a fetch, asked in the
// connection's reader: READ on each topic for a consumer, CLUSTER_ACTION
// for another broker's replica; a denied topic's partitions get its
// error.
func fetchDenied(srv *Server, r *request, req *kmsg.FetchRequest, names []string) map[string]*kerr.Error {
	denied := map[string]*kerr.Error{}
	if req.Version < 15 && req.ReplicaID >= 0 || req.Version >= 15 && req.ReplicaState.ID >= 0 {
		if err := r.onCluster(srv, kmsg.ACLOperationClusterAction); err != nil {
			for _, name := range names {
				denied[name] = err
			}
		}
		return denied
	}
	for _, name := range names {
		if name != "" || req.Version < 13 {
			if err := r.onTopic(srv, kmsg.ACLOperationRead, name); err != nil {
				denied[name] = err
			}
		}
	}
	return denied
}

// fetchTopicNames are the request's topics' names, resolved once per
// request from the ids of v13+ (each a read of the metadata) rather than
// at every pass of a long poll; "" for an id the metadata does not know.
func fetchTopicNames(srv *Server, req *kmsg.FetchRequest) []string {
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
		if req.Version >= 13 {
			names[i], _ = srv.Meta.TopicName(t.TopicID)
		}
	}
	return names
}

func (srv *Server) fetchOnce(req *kmsg.FetchRequest, names []string, listener string, denied map[string]*kerr.Error) (*kmsg.FetchResponse, int, bool, []<-chan struct{}) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 50 << 20
	}
	total, failed := 0, false
	var wake []<-chan struct{}
	listed := map[int32]bool{}
	metaWake := false
	// A follower fetch (another broker's replica catching up) is answered
	// by any replica from its own log, which holds committed records only.
	fromReplica := req.Version < 15 && req.ReplicaID >= 0 || req.Version >= 15 && req.ReplicaState.ID >= 0
	for i, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, known := names[i], names[i] != "" || req.Version < 13
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.RecordBatches = []byte{} // librdkafka rejects a null record set
			if !known {
				rp.ErrorCode, failed = kerr.UnknownTopicID.Code, true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if err := denied[name]; err != nil {
				rp.ErrorCode, failed = err.Code, true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if name == meta.OffsetsTopic && !fromReplica {
				rp, partFailed := srv.fetchOffsetsTopic(p, min(int(p.PartitionMaxBytes), budget))
				total, budget, failed = total+len(rp.RecordBatches), budget-len(rp.RecordBatches), failed || partFailed
				if !metaWake {
					metaWake = true
					wake = append(wake, srv.Meta.Changed()) // a commit appends to the topic
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			var rep *replica.Replica
			var info partitionInfo
			var err *kerr.Error
			if fromReplica {
				rep, err = srv.hostedReplica(name, p.Partition)
			} else {
				rep, info, err = srv.actingReplica(name, p.Partition, true)
			}
			if err != nil {
				rp.ErrorCode, failed = err.Code, true
				if h, ok := srv.leaderHintFor(name, p.Partition, listener); ok && err == kerr.NotLeaderForPartition {
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
					if !listed[h.leader] {
						listed[h.leader] = true
						resp.Brokers = append(resp.Brokers, kmsg.FetchResponseBroker{NodeID: h.leader, Host: h.host, Port: h.port, Rack: h.rack})
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			log := rep.StateMachine().Log()
			wake = append(wake, log.Changed())
			if info.Held && !metaWake {
				metaWake = true
				wake = append(wake, srv.Meta.Changed()) // a hold rises or lifts in the metadata
			}
			start, end := log.Offsets()
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = end, log.LastStable(), start
			maxBytes := min(int(p.PartitionMaxBytes), budget)
			if total > 0 && maxBytes <= 0 {
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			committed := req.IsolationLevel == 1 && !fromReplica
			data, rerr := readForConsumer(log, info, p.FetchOffset, maxBytes, committed)
			if committed && len(data) > 0 {
				rp.AbortedTransactions = abortedIn(log, p.FetchOffset, partition.EndOfBatches(data))
			}
			switch {
			case errors.Is(rerr, partition.ErrOffsetOutOfRange):
				rp.ErrorCode, failed = kerr.OffsetOutOfRange.Code, true
			case rerr != nil:
				rp.ErrorCode, failed = kerr.KafkaStorageError.Code, true
			case data != nil:
				rp.RecordBatches = data
				total += len(data)
				budget -= len(data)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, total, failed, wake
}

// waitAny returns when any channel closes, after d, or when stop closes.
func waitAny(chans []<-chan struct{}, d time.Duration, stop <-chan struct{}) {
	if d <= 0 {
		return
	}
	woke := make(chan struct{})
	var once sync.Once
	done := make(chan struct{})
	defer close(done)
	for _, ch := range chans {
		go func(ch <-chan struct{}) {
			select {
			case <-ch:
				once.Do(func() { close(woke) })
			case <-done:
			}
		}(ch)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-woke:
	case <-t.C:
	case <-stop:
	}
}

// readForConsumer reads a partition for a consumer: a partition an
// ordered growth holds yields only the batches before its hold (the high
// watermark stays the log end, so the held records count as lag); a
// read_committed one only those before the last stable offset. A
// replica's fetch has no view (info is zero) and is never held.
func readForConsumer(log *partition.Log, info partitionInfo, offset int64, maxBytes int, committed bool) ([]byte, error) {
	limit, limited := int64(0), false
	if info.Held {
		limit, limited = info.Hold, true
	}
	if committed {
		if lso := log.LastStable(); !limited || lso < limit {
			limit, limited = lso, true
		}
	}
	if limited && offset >= limit {
		if start, end := log.Offsets(); offset < start || offset > end {
			return nil, partition.ErrOffsetOutOfRange
		}
		return nil, nil
	}
	data, err := log.Read(offset, int32(max(maxBytes, 1)))
	if limited {
		data = partition.RecordsBefore(data, limit)
	}
	return data, err
}

// abortedIn lists the transactions aborted with records in [from, to),
// for a read_committed consumer to drop.
func abortedIn(log *partition.Log, from, to int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	var out []kmsg.FetchResponseTopicPartitionAbortedTransaction
	for _, a := range log.AbortedIn(from, to) {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, at)
	}
	return out
}
