package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/cluster"
	"github.com/raftka/raftka/broker/meta"
)

// DescribeQuorum v0-2 (flexible): the metadata group as the partition
// __cluster_metadata-0 (kafka-metadata-quorum.sh describe --status and
// --replication): its leader and term, the voters and the observers, each
// named by broker id and, from v2, by its incarnation as the directory id.
// The log end offsets of the others are not known here: -1, as Kafka
// gives for an unknown one; the high watermark is the last index this
// broker applied.
func init() { register(kmsg.DescribeQuorum, 0, 2, handleDescribeQuorum) }

// metadataTopic is the name Kafka's tools give the metadata log.
const metadataTopic = "__cluster_metadata"

func handleDescribeQuorum(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeQuorumRequest)
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		ctx, cancel := context.WithTimeout(srv.ctx, 5*time.Second)
		defer cancel()
		view, err := srv.Quorum.Describe(ctx)
		switch {
		case errors.Is(err, dragonboat.ErrClusterNotFound):
			// Retriable: the client asks the metadata group's leader.
			resp.ErrorCode, resp.ErrorMessage = kerr.NotController.Code, kmsg.StringPtr("this broker left the metadata group")
			return resp
		case err != nil:
			resp.ErrorCode, resp.ErrorMessage = kerr.RequestTimedOut.Code, kmsg.StringPtr("the metadata group did not answer: "+err.Error())
			return resp
		}
		listed := map[int32]bool{}
		for _, rt := range req.Topics {
			t := kmsg.NewDescribeQuorumResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewDescribeQuorumResponseTopicPartition()
				p.Partition = rp.Partition
				if rt.Topic != metadataTopic || rp.Partition != 0 {
					p.ErrorCode = kerr.UnknownTopicOrPartition.Code
					t.Partitions = append(t.Partitions, p)
					continue
				}
				p.LeaderID, p.LeaderEpoch, p.HighWatermark = view.Leader, view.Term, int64(view.Applied)
				for _, m := range view.Voters {
					p.CurrentVoters = append(p.CurrentVoters, quorumReplicaState(srv, m))
					listed[m.Broker] = true
				}
				for _, m := range view.Observers {
					p.Observers = append(p.Observers, quorumReplicaState(srv, m))
					listed[m.Broker] = true
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		for _, id := range slices.Sorted(maps.Keys(listed)) {
			br, ok := view.Brokers[id]
			if !ok {
				continue
			}
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = id
			endpoints := br.Listeners
			if len(endpoints) == 0 { // registered before listeners were recorded
				endpoints = []meta.Endpoint{{Name: "PLAINTEXT", Host: br.Host, Port: br.Port}}
			}
			for _, e := range endpoints {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = e.Name, e.Host, uint16(e.Port)
				n.Listeners = append(n.Listeners, l)
			}
			resp.Nodes = append(resp.Nodes, n)
		}
		return resp
	}
	return nil, nil
}

func quorumReplicaState(srv *Server, m cluster.Member) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	s.ReplicaID, s.ReplicaDirectoryID, s.LogEndOffset = m.Broker, m.Incarnation, -1
	if m.Broker == srv.cfg.ID {
		s.LogEndOffset = int64(srv.Meta.Applied())
	}
	return s
}
