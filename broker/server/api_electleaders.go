package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
)

// ElectLeaders v0-v2 (v2 flexible). Preferred leader election
// (kafka-leader-election.sh --election-type preferred): each partition's
// leadership goes to its first replica, by Raft leader transfer, if that
// replica is live, votes and has caught up; a broker asks, for a partition
// it does not host, a broker that does. Null topics ask for every
// partition. Unclean election (--election-type unclean) is a forced
// recovery (package replica): only for a partition whose group lost a quorum
// of its voters' data, which Raft never elects a leader in, named one by
// one; it restarts the group from its most up-to-date surviving voter and
// answers with what was kept and what is gone.
func init() { register(kmsg.ElectLeaders, 0, 2, handleElectLeaders) }

const electLeadersWait = 10 * time.Second

func handleElectLeaders(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ElectLeadersRequest)
	timeout := adminTimeout(req.TimeoutMillis, electLeadersWait)
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		ctx, cancel := context.WithTimeout(srv.ctx, timeout)
		defer cancel()
		asked := req.Topics
		if asked == nil {
			asked = srv.allPartitions()
		}
		for _, t := range asked {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, index := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition = index
				var err *kerr.Error
				var msg string
				switch {
				case req.ElectionType == 1 && req.Topics == nil:
					err, msg = kerr.InvalidRequest, "a forced recovery names its partitions"
				case req.ElectionType == 1:
					err, msg = srv.Replicas.ForceRecovery(ctx, t.Topic, index)
				case req.ElectionType != 0:
					err, msg = kerr.InvalidRequest, "unknown election type"
				default:
					err, msg = srv.electPreferred(ctx, t.Topic, index, req.Version)
				}
				if err != nil {
					rp.ErrorCode = err.Code
				}
				if msg != "" {
					rp.ErrorMessage = kmsg.StringPtr(msg)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return nil, nil
}

func (srv *Server) allPartitions() []kmsg.ElectLeadersRequestTopic {
	var out []kmsg.ElectLeadersRequestTopic
	srv.Meta.Read(func(s *meta.State) {
		for _, name := range s.TopicNames() {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = name
			for _, p := range s.Topic(name).Partitions {
				rt.Partitions = append(rt.Partitions, p.Index)
			}
			out = append(out, rt)
		}
	})
	return out
}

// electPreferred moves a partition's leadership to its preferred replica
// and waits until that replica leads.
func (srv *Server) electPreferred(ctx context.Context, topic string, index int32, version int16) (*kerr.Error, string) {
	info, kerr0 := srv.partitionFor(topic, index)
	if kerr0 != nil {
		return kerr0, "unknown topic or partition"
	}
	if len(info.Replicas) == 0 {
		return kerr.PreferredLeaderNotAvailable, "the partition has no replicas"
	}
	preferred := info.Replicas[0]
	if info.Leader == preferred {
		return kerr.ElectionNotNeeded, "the preferred replica leads already"
	}
	if !srv.Liveness.IsLive(preferred) {
		return kerr.PreferredLeaderNotAvailable, "the preferred replica's broker does not answer"
	}
	if srv.Replicas.Replica(info.Shard) == nil {
		return srv.forwardElection(ctx, topic, index, version, preferred)
	}
	node := srv.Meta.NodeOf(info.Shard, preferred)
	for ctx.Err() == nil {
		if id, ok, err := srv.Raft.GetLeaderID(info.Shard); err == nil && ok && id == node {
			return nil, ""
		}
		_ = srv.Raft.RequestLeaderTransfer(info.Shard, node)
		wait.Sleep(ctx, 200*time.Millisecond)
	}
	return kerr.PreferredLeaderNotAvailable, "the preferred replica did not take the leadership in time: it may be catching up"
}

// forwardElection asks the preferred replica's broker, which hosts the
// partition, to elect it.
func (srv *Server) forwardElection(ctx context.Context, topic string, index int32, version int16, via int32) (*kerr.Error, string) {
	cl, err := srv.Replicas.PeerClient(via)
	if err != nil {
		return kerr.PreferredLeaderNotAvailable, "the preferred replica's broker cannot be reached"
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = version, 0
	req.TimeoutMillis = int32(time.Until(deadlineOf(ctx)) / time.Millisecond)
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{index}
	req.Topics = append(req.Topics, rt)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return kerr.PreferredLeaderNotAvailable, "the preferred replica's broker did not answer: " + err.Error()
	}
	topics := resp.(*kmsg.ElectLeadersResponse).Topics
	if len(topics) == 1 && len(topics[0].Partitions) == 1 {
		p := topics[0].Partitions[0]
		if p.ErrorCode == 0 {
			return nil, ""
		}
		msg := ""
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		return kafkaerr.Of(kerr.ErrorForCode(p.ErrorCode), kerr.UnknownServerError), msg
	}
	return kerr.PreferredLeaderNotAvailable, "the preferred replica's broker gave no answer for the partition"
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(electLeadersWait)
}
