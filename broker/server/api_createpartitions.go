package server

import (
	"context"
	"fmt"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// CreatePartitions v0-v3: grows a topic; v2 flexible. An assignment
// places the new partitions' replicas, one entry per new partition, each
// with the topic's replication factor.
func init() { register(kmsg.CreatePartitions, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	timeout := adminTimeout(req.TimeoutMillis, 60*time.Second)
	denied := map[string]*kerr.Error{} // ALTER on each topic, asked in the reader
	for _, t := range req.Topics {
		denied[t.Topic] = r.onTopic(srv, kmsg.ACLOperationAlter, t.Topic)
	}
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		ctx, cancel := context.WithTimeout(srv.ctx, timeout)
		defer cancel()
		var grown []string
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			if err := denied[t.Topic]; err != nil {
				rt.ErrorCode = err.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			cp := &meta.CreatePartitions{Placement: srv.placementRules(), Name: t.Topic, Count: t.Count, ValidateOnly: req.ValidateOnly,
				Ordered: srv.orderedGrowth(t.Topic), At: time.Now().UnixMilli()}
			for _, a := range t.Assignment {
				cp.Assignment = append(cp.Assignment, append([]int32{}, a.Replicas...))
			}
			if cp.Assignment != nil && cp.Placement < meta.PlacementEpochs {
				rt.ErrorCode = kerr.InvalidRequest.Code
				rt.ErrorMessage = kmsg.StringPtr("brokers from before replica assignments are still running: finish the upgrade first")
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			out, err := srv.Propose(ctx, &meta.Command{CreatePartitions: cp})
			switch {
			case err != nil:
				rt.ErrorCode = kerr.RequestTimedOut.Code
			case out.Err != nil:
				rt.ErrorCode = kafkaerr.Code(out.Err)
				switch out.Err {
				case kerr.InvalidPartitions:
					rt.ErrorMessage = kmsg.StringPtr(srv.partitionsOnlyGrow(t.Topic, t.Count))
				case kerr.InvalidReplicaAssignment:
					rt.ErrorMessage = kmsg.StringPtr("the assignment must name one replica list per new partition, each with the topic's replication factor, each broker once, and only brokers the cluster knows")
				case kerr.PolicyViolation:
					rt.ErrorMessage = kmsg.StringPtr(srv.replicaLimitMessage())
				}
			default:
				grown = append(grown, t.Topic)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		srv.awaitLeaders(ctx, grown)
		return resp
	}
	return nil, nil
}

// orderedGrowth reads the topic's raftka.growth.ordered for the command,
// so that a replica replaying it later grows the topic as it did then. In
// a rolling upgrade, a growth is ordered only once every broker applies
// growths: a replica of the metadata that ignored one would hold nobody.
func (srv *Server) orderedGrowth(topic string) bool {
	ordered := false
	srv.Meta.Read(func(s *meta.State) {
		if t := s.Topic(topic); t != nil {
			ordered = t.OrderedGrowth() && s.AllBrokersHave(meta.FeatureOrderedGrowth)
		}
	})
	return ordered
}

// partitionsOnlyGrow says why a CreatePartitions count was refused, with
// the topic's count now.
func (srv *Server) partitionsOnlyGrow(topic string, asked int32) string {
	now := -1
	srv.Meta.Read(func(s *meta.State) {
		if t := s.Topic(topic); t != nil {
			now = len(t.Partitions)
		}
	})
	if now < 0 {
		return "the partition count can only grow"
	}
	return fmt.Sprintf("topic %s has %d partitions, and partitions only grow: ask for more than %d, not %d", topic, now, now, asked)
}
