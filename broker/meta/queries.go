package meta

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/quota"
)

// The named questions readers ask of the metadata, within a Read. What
// they return that is not a copy (a *Topic, a *Partition, a slice of the
// state's) must not be kept past the read or changed.

// ClusterID is the cluster's id, or "" before the first registration.
func (s *State) ClusterID() string { return s.clusterID }

// Broker is a registered broker by id.
func (s *State) Broker(id int32) (Broker, bool) {
	b, ok := s.brokers[id]
	return b, ok
}

// Brokers are the registered brokers in ascending order of id.
func (s *State) Brokers() []Broker {
	out := make([]Broker, 0, len(s.brokers))
	for _, id := range s.BrokerIDs() {
		out = append(out, s.brokers[id])
	}
	return out
}

// BrokerIDs returns the registered broker ids in ascending order.
func (s *State) BrokerIDs() []int32 { return slices.Sorted(maps.Keys(s.brokers)) }

// RetiredGeneration is the last generation of an unregistered broker id,
// if the metadata has one.
func (s *State) RetiredGeneration(id int32) (uint32, bool) {
	g, ok := s.retired[id]
	return g, ok
}

// AllBrokersHave reports whether every registered broker applies the
// feature's commands (Broker.Features).
func (s *State) AllBrokersHave(feature string) bool {
	for _, b := range s.brokers {
		if !slices.Contains(b.Features, feature) {
			return false
		}
	}
	return len(s.brokers) > 0
}

// Established reports whether the cluster has ever registered a broker: a
// metadata replica that has not is at most a founder still starting.
func (s *State) Established() bool { return len(s.brokers) > 0 }

// AllBrokersRecordIncarnations reports whether every registered broker
// registered with an incarnation, which brokers from before incarnations
// do not: only then do all of them apply the commands that came with
// incarnations (placement epochs, reassignments) as their proposers do.
func (s *State) AllBrokersRecordIncarnations() bool {
	for _, b := range s.brokers {
		if b.Incarnation == "" {
			return false
		}
	}
	return true
}

// VotesInMetadata reports whether broker id is one of the metadata
// group's voters, given the founding voters for a state that has recorded
// none yet.
func (s *State) VotesInMetadata(id int32, founding map[int32]string) bool {
	if s.metadataVoters == nil {
		_, ok := founding[id]
		return ok
	}
	return slices.Contains(s.metadataVoters, id)
}

// MetadataVoters are the brokers recorded as the metadata group's voters,
// nil while the founding voters are.
func (s *State) MetadataVoters() []int32 { return slices.Clone(s.metadataVoters) }

// Topic is a topic by name, or nil.
func (s *State) Topic(name string) *Topic { return s.topics[name] }

// TopicNames are the topics' names, sorted.
func (s *State) TopicNames() []string { return slices.Sorted(maps.Keys(s.topics)) }

// Topics are the topics in the order of their names.
func (s *State) Topics() []*Topic {
	out := make([]*Topic, 0, len(s.topics))
	for _, n := range s.TopicNames() {
		out = append(out, s.topics[n])
	}
	return out
}

// TopicByID finds a topic by its id.
func (s *State) TopicByID(id [16]byte) *Topic { return s.topicsByID[id] }

// Partition is a topic's partition by index, and its topic, or nils.
func (s *State) Partition(topic string, index int32) (*Topic, *Partition) {
	t := s.topics[topic]
	if t == nil || index < 0 || int(index) >= len(t.Partitions) {
		return nil, nil
	}
	return t, &t.Partitions[index]
}

// PartitionOfShard finds the partition a Raft shard replicates, or nils.
func (s *State) PartitionOfShard(shard uint64) (*Topic, *Partition) {
	ref, ok := s.shards[shard]
	if !ok {
		return nil, nil
	}
	return ref.topic, &ref.topic.Partitions[ref.index]
}

// PartitionName names a partition shard as topic-index, for logs.
func (s *State) PartitionName(shard uint64) string {
	if t, p := s.PartitionOfShard(shard); t != nil {
		return t.Name + "-" + strconv.Itoa(int(p.Index))
	}
	return "shard-" + strconv.FormatUint(shard, 10)
}

// EachPartitionOf calls fn with every partition that has a replica on
// broker, and its topic.
func (s *State) EachPartitionOf(broker int32, fn func(*Topic, *Partition)) {
	for _, t := range s.topics {
		for i := range t.Partitions {
			if p := &t.Partitions[i]; slices.Contains(p.Replicas, broker) {
				fn(t, p)
			}
		}
	}
}

// HostsReplicas reports whether a broker holds a replica of any partition.
func (s *State) HostsReplicas(id int32) bool {
	found := false
	s.EachPartitionOf(id, func(*Topic, *Partition) { found = true })
	return found
}

// BrokerConfig returns a broker config set at run time for broker id, or
// for every broker, and whether one is.
func (s *State) BrokerConfig(id int32, key string) (string, bool) {
	if v, ok := s.DynamicBrokerConfig(strconv.Itoa(int(id)), key); ok {
		return v, true
	}
	return s.DynamicBrokerConfig("", key)
}

// DynamicBrokerConfig is a broker config set at run time at one level:
// for the broker whose id scope names, or for every broker (scope "").
func (s *State) DynamicBrokerConfig(scope, key string) (string, bool) {
	v, ok := s.brokerConfigs[scope][key]
	return v, ok
}

// ACLs are the authorizer's bindings, in the order they were made.
func (s *State) ACLs() []acl.Binding { return s.acls }

// ClientQuotas are the client quota configs.
func (s *State) ClientQuotas() []quota.Config { return s.clientQuotas }

// ScramCredential is a user's credential for a SCRAM mechanism.
func (s *State) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	c, ok := s.scramCredentials[user][mechanism]
	return c, ok
}

// ScramCredentialsOf are a user's credentials by mechanism, a copy.
func (s *State) ScramCredentialsOf(user string) map[string]ScramCredential {
	return maps.Clone(s.scramCredentials[user])
}

// HasGroupOffsets reports whether a group has committed offsets.
func (s *State) HasGroupOffsets(group string) bool {
	_, ok := s.offsets[group]
	return ok
}

// GroupsWithOffsets are the groups that have committed offsets, sorted.
func (s *State) GroupsWithOffsets() []string {
	return slices.Sorted(maps.Keys(s.offsets))
}

// GroupsCommittedOn are the groups with an offset on topic committed at
// or after since (Unix milliseconds), sorted.
func (s *State) GroupsCommittedOn(topic string, since int64) []string {
	var out []string
	for group, topics := range s.offsets {
		for _, o := range topics[topic] {
			if o.CommittedAt >= since {
				out = append(out, group)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// StartsGrownPartition reports whether group, which has no commit on
// partition index of topic, starts it at its log start rather than where
// its auto.offset.reset says: an ordered growth made the partition, and
// the group consumes the topic (it committed on another partition, or its
// members subscribed to the topic during a growth not lifted yet), so no
// record produced into it since the growth is skipped.
func (s *State) StartsGrownPartition(group, topic string, index int32) bool {
	t, p := s.Partition(topic, index)
	if p == nil || p.Growth == 0 {
		return false
	}
	if len(s.offsets[group][topic]) > 0 {
		return true
	}
	for _, g := range t.Growths {
		if _, ok := g.Joined[group]; ok {
			return true
		}
	}
	return false
}

// GrowingTopics are the topics with an ordered growth not lifted yet, by
// name: the loops that serve growths look at these only.
func (s *State) GrowingTopics() []*Topic {
	var out []*Topic
	for _, t := range s.topics {
		if len(t.Growths) > 0 {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// HeldSince names each topic whose earliest growth holds its consumers,
// with when the hold began (Unix milliseconds).
func (s *State) HeldSince() map[string]int64 {
	out := map[string]int64{}
	for name, t := range s.topics {
		if len(t.Growths) > 0 && !t.Growths[0].Hidden() {
			out[name] = t.Growths[0].VisibleAt
		}
	}
	return out
}

// GroupOffset is a group's committed offset of one partition.
func (s *State) GroupOffset(group, topic string, partition int32) (GroupOffset, bool) {
	o, ok := s.offsets[group][topic][partition]
	return o, ok
}

// EachGroupOffset calls fn with every committed offset of a group.
func (s *State) EachGroupOffset(group string, fn func(topic string, partition int32, o GroupOffset)) {
	for topic, parts := range s.offsets[group] {
		for p, o := range parts {
			fn(topic, p, o)
		}
	}
}

// LeaderReplaced reports whether the replica last recorded as p's leader
// is another node now: its broker came back on an empty disk, or the
// replica left and came back. It holds nothing it can serve as leader.
func (p *Partition) LeaderReplaced() bool {
	return p.Leader >= 0 && p.LeaderNode != 0 && p.NodeOf(p.Leader) != p.LeaderNode
}

// PartitionView is what a request handler needs about one partition,
// copied out of the metadata so that no lock is held while it serves.
type PartitionView struct {
	Shard       uint64
	Replicas    []int32
	Leader      int32
	LeaderEpoch int32
	// LeaderReplaced: see Partition.LeaderReplaced.
	LeaderReplaced bool
	MinISR         int
	MaxMessage     int32
	Compacted      bool
	AppendTime     bool   // message.timestamp.type=LogAppendTime
	Compression    string // compression.type
	// Hidden: an ordered growth made the partition and is not visible to
	// clients yet; its replicas serve only each other.
	Hidden bool
	// Hold, when Held, is where consumers are held back (Topic.Hold).
	Hold int64
	Held bool
	// Grown: an ordered growth made the partition, so a group that
	// consumes the topic starts it at its log start.
	Grown bool
}

// View copies what a handler needs of p, of topic t.
func (p *Partition) View(t *Topic) PartitionView {
	v := PartitionView{Shard: p.Shard, Replicas: slices.Clone(p.Replicas), Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, LeaderReplaced: p.LeaderReplaced(),
		MinISR: int(t.Int(ConfigMinInsyncReplicas)), MaxMessage: int32(t.Int(ConfigMaxMessageBytes)), Compacted: t.HasCleanupPolicy(CleanupCompact),
		AppendTime: t.Value(ConfigTimestampType) == TimestampLogAppendTime, Compression: t.Value(ConfigCompressionType)}
	v.Hidden = p.Index >= t.VisiblePartitions()
	v.Hold, v.Held = t.Hold(p.Index)
	v.Grown = p.Growth > 0
	return v
}

// HostedPartition is a partition that the metadata places on a broker.
type HostedPartition struct {
	Topic    string
	Index    int32
	Shard    uint64
	Replicas []int32
	// Hold, when Held, is where an ordered growth holds its consumers.
	Hold int64
	Held bool
}

// HostedPartitions lists the partitions placed on broker, only those that
// want accepts when it is not nil.
func (s *State) HostedPartitions(broker int32, want func(topic string, index int32) bool) []HostedPartition {
	var out []HostedPartition
	s.EachPartitionOf(broker, func(t *Topic, p *Partition) {
		if want == nil || want(t.Name, p.Index) {
			h := HostedPartition{Topic: t.Name, Index: p.Index, Shard: p.Shard, Replicas: slices.Clone(p.Replicas)}
			h.Hold, h.Held = t.Hold(p.Index)
			out = append(out, h)
		}
	})
	return out
}

// The questions asked alone, each in a read of its own.

// PartitionView is State.Partition's view, or false for an unknown topic
// or partition.
func (m *StateMachine) PartitionView(topic string, index int32) (PartitionView, bool) {
	var v PartitionView
	found := false
	m.Read(func(s *State) {
		if t, p := s.Partition(topic, index); p != nil {
			v, found = p.View(t), true
		}
	})
	return v, found
}

// HeldGrowth is Topic.HeldGrowth, 0 for an unknown topic.
func (m *StateMachine) HeldGrowth(topic string) int {
	seq := 0
	m.Read(func(s *State) {
		if t := s.Topic(topic); t != nil {
			seq = t.HeldGrowth()
		}
	})
	return seq
}

// HostedPartitions is State.HostedPartitions.
func (m *StateMachine) HostedPartitions(broker int32, want func(topic string, index int32) bool) []HostedPartition {
	var out []HostedPartition
	m.Read(func(s *State) { out = s.HostedPartitions(broker, want) })
	return out
}

// PartitionName is State.PartitionName.
func (m *StateMachine) PartitionName(shard uint64) string {
	var name string
	m.Read(func(s *State) { name = s.PartitionName(shard) })
	return name
}

// TopicName resolves a topic id (Produce and Fetch v13+) to its name.
func (m *StateMachine) TopicName(id [16]byte) (string, bool) {
	var name string
	m.Read(func(s *State) {
		if t := s.TopicByID(id); t != nil {
			name = t.Name
		} else if id == s.OffsetsTopicID() {
			name = OffsetsTopic
		}
	})
	return name, name != ""
}

// Broker is State.Broker.
func (m *StateMachine) Broker(id int32) (Broker, bool) {
	var b Broker
	var ok bool
	m.Read(func(s *State) { b, ok = s.Broker(id) })
	return b, ok
}

// ClusterID is State.ClusterID.
func (m *StateMachine) ClusterID() string {
	var id string
	m.Read(func(s *State) { id = s.ClusterID() })
	return id
}

// ACLsAllow reports whether the ACL bindings allow a request.
func (m *StateMachine) ACLsAllow(r acl.Request) bool {
	allowed := false
	m.Read(func(s *State) { allowed = acl.Allowed(s.acls, r) })
	return allowed
}

// ResolveClientQuota is the quota of key that holds for a client, and
// the entity its use counts against (quota.Resolve); false without one.
func (m *StateMachine) ResolveClientQuota(key, user, clientID string) (limit float64, bucket quota.Entity, ok bool) {
	m.Read(func(s *State) {
		if len(s.clientQuotas) > 0 {
			limit, bucket, ok = quota.Resolve(s.clientQuotas, key, user, clientID)
		}
	})
	return limit, bucket, ok
}

// ScramCredential is State.ScramCredential.
func (m *StateMachine) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	var c ScramCredential
	var ok bool
	m.Read(func(s *State) { c, ok = s.ScramCredential(user, mechanism) })
	return c, ok
}

// HasGroupOffsets is State.HasGroupOffsets.
func (m *StateMachine) HasGroupOffsets(group string) bool {
	var has bool
	m.Read(func(s *State) { has = s.HasGroupOffsets(group) })
	return has
}

// NodeOf is the Raft node of broker's replica in the partition whose group
// is shard, or 0 when no partition has that group.
func (m *StateMachine) NodeOf(shard uint64, broker int32) uint64 {
	var node uint64
	m.Read(func(s *State) {
		if _, p := s.PartitionOfShard(shard); p != nil {
			node = p.NodeOf(broker)
		}
	})
	return node
}

// Brokers is State.Brokers.
func (m *StateMachine) Brokers() []Broker {
	var out []Broker
	m.Read(func(s *State) { out = s.Brokers() })
	return out
}

// OlderNodeOf finds, among a group's voters and observers, a node of
// broker from an epoch before current's: one of a replaced incarnation,
// or of a replica that left and came back.
func OlderNodeOf(voters, observers map[uint64]string, broker int32, current uint64) (uint64, bool) {
	members := make([]uint64, 0, len(voters)+len(observers))
	for n := range voters {
		members = append(members, n)
	}
	for n := range observers {
		members = append(members, n)
	}
	slices.Sort(members)
	for _, n := range members {
		if BrokerOfNode(n) == broker && EpochOfNode(n) < EpochOfNode(current) {
			return n, true
		}
	}
	return 0, false
}
