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

// CreateTopics v0-v7: v5 flexible and returns the topic's configs; v7
// returns topic ids. A replica assignment (kafka-topics.sh
// --replica-assignment) places the partitions as it says, with
// partitions and replication factor left at -1, as Kafka requires.
func init() { register(kmsg.CreateTopics, 0, 7, handleCreateTopics) }

func handleCreateTopics(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	timeout := adminTimeout(req.TimeoutMillis, 60*time.Second)
	// CREATE on the cluster or on the topic, asked in the reader.
	mayCreateAll := r.onCluster(srv, kmsg.ACLOperationCreate) == nil
	denied := map[string]*kerr.Error{}
	for _, t := range req.Topics {
		if !mayCreateAll {
			denied[t.Topic] = r.onTopic(srv, kmsg.ACLOperationCreate, t.Topic)
		}
	}
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		ctx, cancel := context.WithTimeout(srv.ctx, timeout)
		defer cancel()
		var created []string
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			if err := denied[t.Topic]; err != nil {
				rt.ErrorCode = err.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			switch t.Topic {
			case meta.OffsetsTopic:
				// It exists: the group coordinator serves it
				// (offsetstopic.go), as Kafka answers for it.
				rt.ErrorCode, rt.ErrorMessage = kerr.TopicAlreadyExists.Code, kmsg.StringPtr("topic "+t.Topic+" already exists: it is the group coordinator's internal topic")
				resp.Topics = append(resp.Topics, rt)
				continue
			case "__transaction_state":
				rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Creation of internal topic "+t.Topic+" is prohibited.")
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			ct := &meta.CreateTopic{Placement: srv.placementRules(), Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor,
				Configs: map[string]string{}, ValidateOnly: req.ValidateOnly}
			if len(t.ReplicaAssignment) > 0 {
				assignment, msg := topicAssignment(t)
				if msg == "" && ct.Placement < meta.PlacementEpochs {
					msg = "brokers from before replica assignments are still running: finish the upgrade first"
				}
				if msg != "" {
					rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
					resp.Topics = append(resp.Topics, rt)
					continue
				}
				ct.Assignment = assignment
			}
			if ct.Partitions == -1 {
				ct.Partitions = srv.cfg.DefaultPartitions
			}
			if ct.ReplicationFactor == -1 {
				ct.ReplicationFactor = srv.cfg.DefaultReplicationFactor
			}
			for _, c := range t.Configs {
				if c.Value != nil {
					ct.Configs[c.Name] = *c.Value
				}
			}
			out, err := srv.Propose(ctx, &meta.Command{CreateTopic: ct})
			switch {
			case err != nil:
				rt.ErrorCode = kerr.RequestTimedOut.Code
			case out.Err != nil:
				rt.ErrorCode = kafkaerr.Code(out.Err)
				rt.ErrorMessage = kmsg.StringPtr(createTopicMessage(out.Err, ct, srv.brokerCount()))
				if out.Err == kerr.PolicyViolation {
					rt.ErrorMessage = kmsg.StringPtr(srv.replicaLimitMessage())
				}
			default:
				fillCreatedTopic(&rt, out.Topic)
				if !req.ValidateOnly {
					created = append(created, t.Topic)
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		srv.awaitLeaders(ctx, created)
		return resp
	}
	return nil, nil
}

// topicAssignment orders a CreateTopics replica assignment by partition,
// or says what is wrong with it.
func topicAssignment(t kmsg.CreateTopicsRequestTopic) ([][]int32, string) {
	if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
		return nil, "with a replica assignment, partitions and replication factor must be -1"
	}
	out := make([][]int32, len(t.ReplicaAssignment))
	for _, a := range t.ReplicaAssignment {
		if a.Partition < 0 || int(a.Partition) >= len(out) || out[a.Partition] != nil {
			return nil, "the replica assignment must name partitions 0 to n-1 once each"
		}
		out[a.Partition] = append([]int32{}, a.Replicas...)
	}
	return out, ""
}

// brokerCount is how many brokers the cluster has registered.
func (srv *Server) brokerCount() int {
	n := 0
	srv.Meta.Read(func(s *meta.State) { n = len(s.BrokerIDs()) })
	return n
}

func createTopicMessage(err error, ct *meta.CreateTopic, brokers int) string {
	switch err {
	case kerr.InvalidReplicaAssignment:
		return "each partition must name the same number of replicas, each broker once, and only brokers the cluster knows"
	case kerr.TopicAlreadyExists:
		return "topic " + ct.Name + " already exists"
	case kerr.InvalidReplicationFactor:
		if ct.ReplicationFactor < 1 {
			return fmt.Sprintf("replication factor %d is below 1", ct.ReplicationFactor)
		}
		return fmt.Sprintf("replication factor %d is larger than the %d brokers the cluster has", ct.ReplicationFactor, brokers)
	case kerr.InvalidConfig:
		return meta.ConfigProblem(ct.Configs, ct.ReplicationFactor)
	case kerr.InvalidTopicException:
		return "topic names are 1-249 characters of [a-zA-Z0-9._-]"
	case kerr.InvalidPartitions:
		return fmt.Sprintf("partitions must be at least 1, not %d", ct.Partitions)
	}
	return err.Error()
}

func fillCreatedTopic(rt *kmsg.CreateTopicsResponseTopic, t *meta.Topic) {
	rt.TopicID = t.ID
	rt.NumPartitions = int32(len(t.Partitions))
	rt.ReplicationFactor = t.ReplicationFactor
	for _, name := range meta.TopicConfigNames() {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value = name, kmsg.StringPtr(t.Value(name))
		c.Source = int8(kmsg.ConfigSourceDefaultConfig)
		if _, set := t.Configs[name]; set {
			c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		}
		rt.Configs = append(rt.Configs, c)
	}
}
