package server

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/meta"
)

// Metadata v0-v12: a null topic list means all topics, and in v0, which has
// no null, an empty one does; v9 flexible; v10+ carries topic ids. v0 is
// what older clients (kafka-python 2.0) send right after ApiVersions to
// learn whether the broker is still there.
func init() { register(kmsg.Metadata, 0, 12, handleMetadata) }

// ClusterID is reported in Metadata and DescribeCluster.
const ClusterID = "raftka"

func handleMetadata(srv *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.ClusterID = kmsg.StringPtr(ClusterID)
	resp.ControllerID = -1
	if id, ok := srv.MetaLeader(); ok {
		resp.ControllerID = id
	}
	if req.IncludeClusterAuthorizedOperations && req.GetVersion() <= 10 {
		resp.AuthorizedOperations = r.clusterOperations(srv)
	}
	var missing []string
	who := r.conn.client()
	srv.Meta.Read(func(s *meta.State) {
		defer func() {
			resp.Brokers = srv.metadataBrokers(s, resp, r.conn.listener.Name)
			if req.IncludeTopicAuthorizedOperations {
				topicOperations(resp.Topics, func(op kmsg.ACLOperation, name string) bool {
					return srv.Authz.AllowsIn(s.ACLs(), who, op, kmsg.ACLResourceTypeTopic, name)
				})
			}
		}()
		describable := func(name string) bool {
			return srv.Authz.AllowsIn(s.ACLs(), who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name)
		}
		if req.Topics == nil || (req.GetVersion() == 0 && len(req.Topics) == 0) {
			// Every topic: those the client may describe.
			for _, name := range s.TopicNames() {
				if describable(name) {
					resp.Topics = append(resp.Topics, srv.metadataTopic(s.Topic(name)))
				}
			}
			if describable(meta.OffsetsTopic) {
				resp.Topics = append(resp.Topics, srv.offsetsTopicMetadata(s, resp.ControllerID))
			}
			return
		}
		for _, rt := range req.Topics {
			if rt.Topic != nil && *rt.Topic == meta.OffsetsTopic || rt.Topic == nil && rt.TopicID == s.OffsetsTopicID() {
				mt := srv.offsetsTopicMetadata(s, resp.ControllerID)
				if !describable(meta.OffsetsTopic) {
					mt = kmsg.NewMetadataResponseTopic()
					mt.Topic, mt.TopicID, mt.ErrorCode = rt.Topic, rt.TopicID, kerr.TopicAuthorizationFailed.Code
				}
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			var t *meta.Topic
			if rt.Topic != nil {
				t = s.Topic(*rt.Topic)
			} else {
				t = s.TopicByID(rt.TopicID)
			}
			if t != nil && !describable(t.Name) || t == nil && rt.Topic != nil && !describable(*rt.Topic) {
				// Kafka's answer whether or not the topic exists, so
				// that a client learns no name it may not describe.
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.TopicID, mt.ErrorCode = rt.Topic, rt.TopicID, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.TopicID, mt.ErrorCode = rt.Topic, rt.TopicID, kerr.UnknownTopicOrPartition.Code
				if rt.Topic != nil && meta.ValidateTopicName(*rt.Topic) != nil {
					mt.ErrorCode = kerr.InvalidTopicException.Code
				} else if rt.Topic != nil && (srv.Authz.AllowsIn(s.ACLs(), who, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, acl.ClusterName) ||
					srv.Authz.AllowsIn(s.ACLs(), who, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, *rt.Topic)) {
					missing = append(missing, *rt.Topic) // auto-created below, if on
				}
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, srv.metadataTopic(t))
		}
	})
	if len(missing) > 0 && srv.cfg.AutoCreateTopics && (req.AllowAutoTopicCreation || req.GetVersion() < 4) {
		srv.autoCreate(missing, resp)
	}
	return resp, nil
}

// topicOperations fills in what the client may do on each topic answered
// without an error (KIP-430).
func topicOperations(topics []kmsg.MetadataResponseTopic, allows func(kmsg.ACLOperation, string) bool) {
	for i := range topics {
		t := &topics[i]
		if t.ErrorCode != 0 || t.Topic == nil {
			continue
		}
		name := *t.Topic
		t.AuthorizedOperations = authorizedOperations(kmsg.ACLResourceTypeTopic, func(op kmsg.ACLOperation) bool { return allows(op, name) })
	}
}

// metadataBrokers lists the brokers this broker sees live, and with them
// the controller and every broker that resp names as a partition leader:
// the controller leads the metadata group, which is evidence enough that it
// is live, and clients (sarama's admin) look it up among the brokers listed
// here, also in the moment after a start before the liveness probes have
// seen it. A broker cut off from the others sees none of them live, yet
// names their partitions by the leaders last recorded; a client drops a
// broker missing from a Metadata answer (franz-go does), so leaving them
// out would leave it only the cut-off broker to ask.
func (srv *Server) metadataBrokers(s *meta.State, resp *kmsg.MetadataResponse, listener string) []kmsg.MetadataResponseBroker {
	named := map[int32]bool{resp.ControllerID: true}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			named[p.Leader] = true
		}
	}
	var out []kmsg.MetadataResponseBroker
	for _, br := range s.Brokers() {
		if !named[br.ID] && !srv.Liveness.IsLive(br.ID) {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.Host, mb.Port = br.Address(listener)
		mb.NodeID = br.ID
		if br.Rack != "" {
			mb.Rack = kmsg.StringPtr(br.Rack)
		}
		out = append(out, mb)
	}
	return out
}

// autoCreate creates unknown topics with the broker defaults and answers
// LEADER_NOT_AVAILABLE, as Kafka does, so the client asks again.
func (srv *Server) autoCreate(names []string, resp *kmsg.MetadataResponse) {
	ctx, cancel := context.WithTimeout(srv.ctx, 5*time.Second)
	defer cancel()
	for i := range resp.Topics {
		mt := &resp.Topics[i]
		if mt.Topic == nil || mt.ErrorCode != kerr.UnknownTopicOrPartition.Code || !slices.Contains(names, *mt.Topic) {
			continue
		}
		_, err := srv.Propose(ctx, &meta.Command{CreateTopic: &meta.CreateTopic{Placement: srv.placementRules(), Name: *mt.Topic,
			Partitions: srv.cfg.DefaultPartitions, ReplicationFactor: srv.cfg.DefaultReplicationFactor}})
		if err == nil {
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
		}
	}
}

// metadataTopic describes a topic's partitions as this broker sees them.
// Where this broker led last but its replica knows no leader now, it
// names none (LEADER_NOT_AVAILABLE), though it still stands in for reads
// of committed records: it cannot tell a lost quorum from being cut off,
// and in the cut the others have elected a leader that clients must find.
// librdkafka keeps a leader it is given, whatever the partition error,
// and looks again only on its next leader query; named as leader with
// REPLICA_NOT_AVAILABLE, the cut-off broker kept librdkafka producers on
// it for a 20 s cut in 3 runs of 5. The Java client and franz-go look
// again for a partition without a leader as well.
func (srv *Server) metadataTopic(t *meta.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	for _, p := range t.Partitions[:t.VisiblePartitions()] { // an ordered growth is shown once split
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		info := meta.PartitionView{Shard: p.Shard, Replicas: p.Replicas, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, LeaderReplaced: p.LeaderReplaced()}
		mp.Leader, mp.LeaderEpoch = srv.currentLeader(info)
		mp.Replicas = append([]int32(nil), p.Replicas...)
		mp.ISR = srv.Replicas.InSyncReplicas(p.Shard, p.Replicas)
		for _, id := range p.Replicas {
			if !srv.Liveness.IsLive(id) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, id)
			}
		}
		switch {
		case mp.Leader < 0:
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		case mp.Leader == srv.cfg.ID && !srv.Replicas.IsLeader(p.Shard):
			mp.Leader, mp.ErrorCode = -1, kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
