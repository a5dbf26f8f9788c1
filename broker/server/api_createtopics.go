package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// CreateTopics v0-v7: v5 flexible and returns the topic's configs; v7
// returns topic ids. A replica assignment (kafka-topics.sh
// --replica-assignment) places the partitions as it says, with
// partitions and replication factor left at -1, as Kafka requires.
func init() { register(kmsg.CreateTopics, 0, 7, handleCreateTopics) }

func handleCreateTopics(b *Broker, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	timeout := adminTimeout(req.TimeoutMillis, 60*time.Second)
	// CREATE on the cluster or on the topic, asked in the reader.
	mayCreateAll := r.onCluster(b, kmsg.ACLOperationCreate) == nil
	denied := map[string]*kerr.Error{}
	for _, t := range req.Topics {
		if !mayCreateAll {
			denied[t.Topic] = r.onTopic(b, kmsg.ACLOperationCreate, t.Topic)
		}
	}
	r.deferred = func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		ctx, cancel := context.WithTimeout(b.ctx, timeout)
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
			ct := &meta.CreateTopic{Placement: b.placementRules(), Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor,
				Configs: map[string]string{}, ValidateOnly: req.ValidateOnly}
			if len(t.ReplicaAssignment) > 0 {
				assignment, msg := topicAssignment(t)
				if msg == "" && ct.Placement != meta.PlacementEpochs {
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
				ct.Partitions = b.cfg.DefaultPartitions
			}
			if ct.ReplicationFactor == -1 {
				ct.ReplicationFactor = b.cfg.DefaultReplicationFactor
			}
			for _, c := range t.Configs {
				if c.Value != nil {
					ct.Configs[c.Name] = *c.Value
				}
			}
			out, err := b.proposeMeta(ctx, &meta.Command{CreateTopic: ct})
			switch {
			case err != nil:
				rt.ErrorCode = kerr.RequestTimedOut.Code
			case out.Err != nil:
				rt.ErrorCode = errCode(out.Err)
				rt.ErrorMessage = kmsg.StringPtr(createTopicMessage(out.Err, ct))
			default:
				fillCreatedTopic(&rt, out.Topic)
				if !req.ValidateOnly {
					created = append(created, t.Topic)
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		b.awaitLeaders(ctx, created)
		return resp
	}
	return nil, nil
}

// placementRules are the newest placement rules every broker applies:
// while brokers from before placement epochs run (a rolling upgrade), the
// rules they know, so that every replica of the metadata places alike.
func (b *Broker) placementRules() int {
	rules := meta.PlacementLegacy
	b.meta.Read(func(s *meta.State) {
		if s.AllBrokersRecordIncarnations() {
			rules = meta.PlacementEpochs
		}
	})
	return rules
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

func createTopicMessage(err error, ct *meta.CreateTopic) string {
	switch err {
	case kerr.InvalidReplicaAssignment:
		return "each partition must name the same number of replicas, each broker once, and only brokers the cluster knows"
	case kerr.TopicAlreadyExists:
		return "topic " + ct.Name + " already exists"
	case kerr.InvalidReplicationFactor:
		return "replication factor is larger than the number of brokers, or below 1"
	case kerr.InvalidConfig:
		return "unknown topic config, or a value out of range (supported: see DescribeConfigs)"
	case kerr.InvalidTopicException:
		return "topic names are 1-249 characters of [a-zA-Z0-9._-]"
	case kerr.InvalidPartitions:
		return "partitions must be at least 1"
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

// preferredLeaderWait bounds how long awaitLeaders waits, once every new
// partition has a leader, for the live preferred replicas to lead.
const preferredLeaderWait = 4 * time.Second

// awaitLeaders waits, within ctx, until every partition of the topics has
// a leader recorded, so a client that creates then produces does not start
// with a round of LEADER_NOT_AVAILABLE; and, for a little longer, until
// each is led by its preferred replica (the leader hands it over at once,
// see handBackNewPartition), so leadership does not move under the client
// right after it starts. A preferred replica on a broker the liveness
// probes have not seen yet is probed first rather than taken for gone.
func (b *Broker) awaitLeaders(ctx context.Context, topics []string) {
	var preferredBrokers []meta.Broker
	b.meta.Read(func(s *meta.State) {
		seen := map[int32]bool{}
		for _, name := range topics {
			if t := s.Topic(name); t != nil {
				for _, p := range t.Partitions {
					if len(p.Replicas) > 0 && !seen[p.Replicas[0]] {
						seen[p.Replicas[0]] = true
						br, _ := s.Broker(p.Replicas[0])
						preferredBrokers = append(preferredBrokers, br)
					}
				}
			}
		}
	})
	b.liveness.Confirm(preferredBrokers)
	var allLedSince time.Time
	for len(topics) > 0 {
		changed := b.meta.Changed()
		led, preferred := true, true
		b.meta.Read(func(s *meta.State) {
			for _, name := range topics {
				if t := s.Topic(name); t != nil {
					for _, p := range t.Partitions {
						led = led && p.Leader >= 0
						if len(p.Replicas) > 0 && p.Leader != p.Replicas[0] && b.liveness.IsLive(p.Replicas[0]) {
							preferred = false
						}
					}
				}
			}
		})
		if led && allLedSince.IsZero() {
			allLedSince = time.Now()
		}
		if led && (preferred || time.Since(allLedSince) > preferredLeaderWait) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(200 * time.Millisecond):
		}
	}
}
