package meta

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/quota"
)

// FirstPartitionShard is the first Raft shard id given to a partition;
// shard 1 is the metadata group.
const (
	MetadataShard       uint64 = 1
	FirstPartitionShard uint64 = 100
	// ProducerIDBlock is how many producer ids a broker takes at once.
	ProducerIDBlock int64 = 1000
)

// Broker is a registered broker.
type Broker struct {
	ID       int32
	Host     string
	Port     int32
	RaftAddr string
	// HTTPAddr is the broker's HTTP endpoint (empty before it was
	// recorded, or without one), which peers ask of its replicas' state.
	HTTPAddr string `json:",omitempty"`
	Rack     string `json:",omitempty"`
	// Incarnation names the data directory the broker runs on (package
	// identity); empty for a broker registered before incarnations were
	// recorded, which is generation 0.
	Incarnation string `json:",omitempty"`
	// Generation counts the broker's incarnations. It is the epoch of the
	// broker's node in the metadata group (RaftNodeID); its partition
	// replicas get new nodes with each incarnation too (Partition.Nodes),
	// so a broker that came back on an empty disk never votes or
	// acknowledges as a replica it used to be.
	Generation uint32 `json:",omitempty"`
	// Listeners are the broker's named Kafka listeners as clients reach
	// them; Host and Port are its inter-broker listener's. Empty for a
	// broker registered before listeners were recorded.
	Listeners []Endpoint `json:",omitempty"`
}

// Endpoint is one of a broker's named listeners.
type Endpoint struct {
	Name string
	Host string
	Port int32
}

// Address is where a client that connected through the named listener
// reaches the broker: that listener's advertised address, or the
// inter-broker listener's when the broker records none of that name (it
// registered before listeners were recorded, or runs with other
// listeners for the moment of a rolling change).
func (b Broker) Address(listener string) (string, int32) {
	for _, e := range b.Listeners {
		if e.Name == listener {
			return e.Host, e.Port
		}
	}
	return b.Host, b.Port
}

// Node is this broker's Raft node id in the metadata group.
func (b Broker) Node() uint64 { return RaftNodeID(b.ID, b.Generation) }

// Topic is a topic and its partitions.
type Topic struct {
	Name              string
	ID                [16]byte
	ReplicationFactor int16
	Configs           map[string]string `json:",omitempty"`
	Partitions        []Partition
}

// GroupOffset is a committed consumer-group offset.
type GroupOffset struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string `json:",omitempty"`
}

// State is the whole replicated metadata.
type State struct {
	// ClusterID is the cluster's id, given at the first registration; a
	// data directory records the cluster it belongs to.
	ClusterID string `json:",omitempty"`
	Brokers   map[int32]Broker
	Topics    map[string]*Topic
	NextShard uint64
	// NextNodeEpoch is the epoch of the next partition replica nodes
	// placed (RaftNodeID); 0 in a state from before, read as 1.
	NextNodeEpoch uint32 `json:",omitempty"`
	// Retired holds the last generation of each unregistered broker id,
	// so that a broker given that id again never reuses a metadata node.
	Retired map[int32]uint32 `json:",omitempty"`
	// MetadataVoters are the brokers that vote in the metadata group,
	// sorted; nil until a voter was first added or removed, while the
	// founding voters (--metadata-voters) are the voters.
	MetadataVoters []int32 `json:",omitempty"`
	NextProducerID int64
	// BrokerConfigs are broker configs set at run time: broker id (or ""
	// for every broker) -> key -> value.
	BrokerConfigs map[string]map[string]string `json:",omitempty"`
	// Offsets: group -> topic -> partition -> offset.
	Offsets map[string]map[string]map[int32]GroupOffset
	// ScramCredentials: user -> mechanism -> credential (scram.go).
	ScramCredentials map[string]map[string]ScramCredential `json:",omitempty"`
	// ACLs are the authorizer's bindings, in the order they were made
	// (acls.go).
	ACLs []acl.Binding `json:",omitempty"`
	// ClientQuotas are the client quota configs, in the order their
	// entities were first given one (quotas.go).
	ClientQuotas []quota.Config `json:",omitempty"`

	// topicsByID indexes Topics by id for Fetch and Produce v13+, which
	// name topics by id in every request; derived, so not in snapshots.
	topicsByID map[[16]byte]*Topic
	// shards indexes partitions by their Raft shard; derived too.
	shards map[uint64]shardRef
}

// shardRef locates a partition: its topic and index.
type shardRef struct {
	topic *Topic
	index int
}

// NewState returns an empty cluster.
func NewState() *State {
	return &State{Brokers: map[int32]Broker{}, Topics: map[string]*Topic{}, NextShard: FirstPartitionShard,
		NextProducerID: 1000, Offsets: map[string]map[string]map[int32]GroupOffset{}, topicsByID: map[[16]byte]*Topic{}, shards: map[uint64]shardRef{}}
}

// reindex rebuilds the derived topic-id index, after a snapshot is read.
func (s *State) reindex() {
	s.topicsByID = make(map[[16]byte]*Topic, len(s.Topics))
	s.shards = map[uint64]shardRef{}
	for _, t := range s.Topics {
		s.topicsByID[t.ID] = t
		s.indexShards(t)
	}
}

// BrokerIDs returns the registered broker ids in ascending order.
func (s *State) BrokerIDs() []int32 {
	ids := make([]int32, 0, len(s.Brokers))
	for id := range s.Brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// TopicByID finds a topic by its id.
func (s *State) TopicByID(id [16]byte) *Topic { return s.topicsByID[id] }

// PartitionOfShard finds the partition a Raft shard replicates, or nils.
// The partition must not be kept past the read that found it.
func (s *State) PartitionOfShard(shard uint64) (*Topic, *Partition) {
	ref, ok := s.shards[shard]
	if !ok {
		return nil, nil
	}
	return ref.topic, &ref.topic.Partitions[ref.index]
}

// EachPartitionOf calls fn with every partition that has a replica on
// broker, and its topic; neither may be kept past the read.
func (s *State) EachPartitionOf(broker int32, fn func(*Topic, *Partition)) {
	for _, t := range s.Topics {
		for i := range t.Partitions {
			if p := &t.Partitions[i]; slices.Contains(p.Replicas, broker) {
				fn(t, p)
			}
		}
	}
}

func (s *State) indexShards(t *Topic) {
	for i, p := range t.Partitions {
		s.shards[p.Shard] = shardRef{topic: t, index: i}
	}
}

// Apply applies one command at Raft index index and returns its outcome.
func (s *State) Apply(index uint64, c *Command) Outcome {
	switch {
	case c.RegisterBroker != nil:
		return s.registerBroker(index, c.RegisterBroker)
	case c.JoinBroker != nil:
		return s.joinBroker(index, c.JoinBroker)
	case c.CreateTopic != nil:
		return s.createTopic(index, c.CreateTopic)
	case c.DeleteTopic != "":
		t := s.Topics[c.DeleteTopic]
		if t == nil {
			return Outcome{Err: kerr.UnknownTopicOrPartition}
		}
		delete(s.Topics, c.DeleteTopic)
		delete(s.topicsByID, t.ID)
		for _, p := range t.Partitions {
			delete(s.shards, p.Shard)
		}
		return Outcome{Topic: t}
	case c.CreatePartitions != nil:
		return s.createPartitions(c.CreatePartitions)
	case c.AlterConfigs != nil:
		return s.alterConfigs(c.AlterConfigs)
	case c.Leader != nil:
		return s.setLeader(c.Leader)
	case c.Reassign != nil:
		return s.reassign(c.Reassign)
	case c.CompleteReassignment != nil:
		return s.completeReassignment(c.CompleteReassignment)
	case c.RenewReplicaNode != nil:
		return s.renewReplicaNode(c.RenewReplicaNode)
	case c.UnregisterBroker != nil:
		return s.unregisterBroker(c.UnregisterBroker)
	case c.RecoverPartition != nil:
		return s.recoverPartition(c.RecoverPartition)
	case c.CompleteRecovery != nil:
		return s.completeRecovery(c.CompleteRecovery)
	case c.SetMetadataVoters != nil:
		return s.setMetadataVoters(c.SetMetadataVoters)
	case c.AlterScramCredentials != nil:
		return s.alterScramCredentials(c.AlterScramCredentials)
	case c.CreateACLs != nil:
		return s.createACLs(c.CreateACLs)
	case c.DeleteACLs != nil:
		return s.deleteACLs(c.DeleteACLs)
	case c.AlterClientQuotas != nil:
		return s.alterClientQuotas(c.AlterClientQuotas)
	case c.AllocateProducerIDs:
		first := s.NextProducerID
		s.NextProducerID += ProducerIDBlock
		return Outcome{ProducerID: first}
	case c.CommitOffsets != nil:
		co := c.CommitOffsets
		g := s.Offsets[co.Group]
		if g == nil {
			g = map[string]map[int32]GroupOffset{}
			s.Offsets[co.Group] = g
		}
		for topic, parts := range co.Offsets {
			if g[topic] == nil {
				g[topic] = map[int32]GroupOffset{}
			}
			for p, o := range parts {
				g[topic][p] = o
			}
		}
		return Outcome{}
	case c.DeleteGroup != "":
		if _, ok := s.Offsets[c.DeleteGroup]; !ok {
			return Outcome{Err: kerr.GroupIDNotFound}
		}
		delete(s.Offsets, c.DeleteGroup)
		return Outcome{}
	case c.DeleteOffsets != nil:
		g := s.Offsets[c.DeleteOffsets.Group]
		for topic, parts := range c.DeleteOffsets.Partitions {
			for _, p := range parts {
				delete(g[topic], p)
			}
			if len(g[topic]) == 0 {
				delete(g, topic)
			}
		}
		return Outcome{}
	}
	return Outcome{Err: kerr.InvalidRequest}
}

// registerBroker records the addresses of a broker incarnation the
// metadata knows, or of a broker's first incarnation (generation 0: a
// founder, or a data directory from before incarnations). Any other claim
// is a data directory that a newer incarnation replaced: refused, so that
// it can never act as the replicas it once was.
func (s *State) registerBroker(index uint64, b *Broker) Outcome {
	cur, known := s.Brokers[b.ID]
	switch {
	case !known && b.Generation != 0:
		return Outcome{Err: kerr.StaleBrokerEpoch}
	case known && cur.Generation != b.Generation:
		return Outcome{Err: kerr.StaleBrokerEpoch}
	case known && cur.Incarnation != "" && cur.Incarnation != b.Incarnation:
		return Outcome{Err: kerr.StaleBrokerEpoch}
	}
	s.Brokers[b.ID] = *b
	s.foundCluster(index, b)
	out := *b
	return Outcome{Broker: &out}
}

// joinBroker records a new incarnation of a broker, one that started on an
// empty data directory while the cluster exists: it gets the next
// generation, never 0 (a founder of the metadata group may have voted as
// generation 0 before it registered). A retried join of the same
// incarnation keeps its generation.
//
// Each partition replica of the broker gets a new Raft node: the leaders
// of those partitions then replace the old nodes by membership change.
func (s *State) joinBroker(index uint64, b *Broker) Outcome {
	cur, known := s.Brokers[b.ID]
	next := *b
	switch {
	case known && cur.Incarnation == b.Incarnation && b.Incarnation != "":
		next.Generation = cur.Generation
	case known:
		next.Generation = cur.Generation + 1
	default:
		next.Generation = s.Retired[b.ID] + 1
		delete(s.Retired, b.ID)
		if len(s.Retired) == 0 {
			s.Retired = nil // as a snapshot restores it
		}
	}
	if !known || cur.Incarnation != b.Incarnation || b.Incarnation == "" {
		s.renewNodes(b.ID)
	}
	s.Brokers[b.ID] = next
	s.foundCluster(index, &next)
	return Outcome{Broker: &next}
}

// unregisterBroker forgets a broker that left for good; refused while it
// holds a partition replica, a move's target included.
func (s *State) unregisterBroker(c *UnregisterBroker) Outcome {
	b, known := s.Brokers[c.ID]
	if !known {
		return Outcome{Err: kerr.BrokerIDNotRegistered}
	}
	if s.HostsReplicas(c.ID) {
		return Outcome{Err: kerr.InvalidRequest}
	}
	delete(s.Brokers, c.ID)
	if s.Retired == nil {
		s.Retired = map[int32]uint32{}
	}
	s.Retired[c.ID] = b.Generation
	if s.MetadataVoters != nil {
		s.MetadataVoters = slices.DeleteFunc(s.MetadataVoters, func(id int32) bool { return id == c.ID })
	}
	return Outcome{Broker: &b}
}

// setMetadataVoters refuses an empty set and brokers that are not
// registered: the group would have no quorum, or a voter it cannot reach.
func (s *State) setMetadataVoters(c *SetMetadataVoters) Outcome {
	voters := slices.Clone(c.Voters)
	slices.Sort(voters)
	voters = slices.Compact(voters)
	if len(voters) == 0 {
		return Outcome{Err: kerr.InvalidRequest}
	}
	for _, id := range voters {
		if _, ok := s.Brokers[id]; !ok {
			return Outcome{Err: kerr.BrokerIDNotRegistered}
		}
	}
	s.MetadataVoters = voters
	return Outcome{}
}

// VotesInMetadata reports whether broker id is one of the metadata
// group's voters, given the founding voters for a state that has recorded
// none yet.
func (s *State) VotesInMetadata(id int32, founding map[int32]string) bool {
	if s.MetadataVoters == nil {
		_, ok := founding[id]
		return ok
	}
	return slices.Contains(s.MetadataVoters, id)
}

// HostsReplicas reports whether a broker holds a replica of any partition.
func (s *State) HostsReplicas(id int32) bool {
	for _, t := range s.Topics {
		for _, p := range t.Partitions {
			if slices.Contains(p.Replicas, id) {
				return true
			}
		}
	}
	return false
}

// foundCluster names the cluster at its first registration, from the
// entry's index and the registering incarnation, since the state machine
// may not draw random numbers.
func (s *State) foundCluster(index uint64, b *Broker) {
	if s.ClusterID != "" {
		return
	}
	sum := sha256.Sum256([]byte(b.Incarnation + "\x00" + strconv.FormatUint(index, 10)))
	s.ClusterID = base64.RawURLEncoding.EncodeToString(sum[:16])
}

// AllBrokersRecordIncarnations reports whether every registered broker
// registered with an incarnation, which brokers from before incarnations
// do not: only then do all of them apply the commands that came with
// incarnations (placement epochs, reassignments) as their proposers do.
func (s *State) AllBrokersRecordIncarnations() bool {
	for _, b := range s.Brokers {
		if b.Incarnation == "" {
			return false
		}
	}
	return true
}

// Established reports whether the cluster has ever registered a broker: a
// metadata replica that has not is at most a founder still starting.
func (s *State) Established() bool { return len(s.Brokers) > 0 }

func (s *State) createTopic(index uint64, ct *CreateTopic) Outcome {
	if err := ValidateTopicName(ct.Name); err != nil {
		return Outcome{Err: err}
	}
	if s.Topics[ct.Name] != nil {
		return Outcome{Err: kerr.TopicAlreadyExists}
	}
	if ct.Assignment != nil {
		if err := s.validateAssignments(ct.Assignment, -1); err != nil {
			return Outcome{Err: err}
		}
		ct.Partitions, ct.ReplicationFactor = int32(len(ct.Assignment)), int16(len(ct.Assignment[0]))
	}
	if ct.Partitions < 1 {
		return Outcome{Err: kerr.InvalidPartitions}
	}
	brokers := s.BrokerIDs()
	if ct.ReplicationFactor < 1 || int(ct.ReplicationFactor) > len(brokers) {
		return Outcome{Err: kerr.InvalidReplicationFactor}
	}
	if err := ValidateConfigs(ct.Configs, ct.ReplicationFactor); err != nil {
		return Outcome{Err: err}
	}
	t := &Topic{Name: ct.Name, ID: topicID(ct.Name, index), ReplicationFactor: ct.ReplicationFactor, Configs: ct.Configs}
	nextShard, nextEpoch := s.NextShard, s.NextNodeEpoch
	s.addPartitions(t, ct.Partitions, ct.Assignment, ct.Placement)
	if !ct.ValidateOnly {
		s.Topics[ct.Name] = t
		s.topicsByID[t.ID] = t
		s.indexShards(t)
	} else {
		s.NextShard, s.NextNodeEpoch = nextShard, nextEpoch
	}
	return Outcome{Topic: t}
}

func (s *State) createPartitions(cp *CreatePartitions) Outcome {
	t := s.Topics[cp.Name]
	if t == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	if cp.Count <= int32(len(t.Partitions)) {
		return Outcome{Err: kerr.InvalidPartitions}
	}
	if cp.Assignment != nil {
		if len(cp.Assignment) != int(cp.Count)-len(t.Partitions) {
			return Outcome{Err: kerr.InvalidReplicaAssignment}
		}
		if err := s.validateAssignments(cp.Assignment, int(t.ReplicationFactor)); err != nil {
			return Outcome{Err: err}
		}
	}
	if cp.ValidateOnly {
		return Outcome{Topic: t}
	}
	s.addPartitions(t, cp.Count-int32(len(t.Partitions)), cp.Assignment, cp.Placement)
	s.indexShards(t)
	return Outcome{Topic: t}
}

// addPartitions adds n partitions to t, placed as assignment says or, if
// it is nil, by the placement rules the command asked for.
func (s *State) addPartitions(t *Topic, n int32, assignment [][]int32, placement int) {
	if placement == PlacementLegacy && assignment == nil {
		s.addLegacyPartitions(t, n)
		return
	}
	if assignment == nil {
		assignment = s.placeReplicas(t, int(n), int(t.ReplicationFactor))
	}
	for _, replicas := range assignment {
		idx := int32(len(t.Partitions))
		epoch := s.nextNodeEpoch()
		nodes := make([]uint64, len(replicas))
		for r, id := range replicas {
			nodes[r] = RaftNodeID(id, epoch)
		}
		t.Partitions = append(t.Partitions, Partition{Index: idx, Shard: s.NextShard, Replicas: append([]int32(nil), replicas...), Leader: -1,
			Nodes: nodes, Founders: append([]uint64(nil), nodes...)})
		s.NextShard++
	}
}

// addLegacyPartitions places partitions as commands from before
// PlacementEpochs did: round-robin, each topic starting at a broker its id
// picks, with the replicas' nodes at epoch 0.
func (s *State) addLegacyPartitions(t *Topic, n int32) {
	brokers := s.BrokerIDs()
	seed := int(binary.BigEndian.Uint32(t.ID[:4]) % uint32(len(brokers)))
	for i := int32(0); i < n; i++ {
		idx := int32(len(t.Partitions))
		replicas := make([]int32, t.ReplicationFactor)
		for r := range replicas {
			replicas[r] = brokers[(seed+int(idx)+r)%len(brokers)]
		}
		t.Partitions = append(t.Partitions, Partition{Index: idx, Shard: s.NextShard, Replicas: replicas, Leader: -1})
		s.NextShard++
	}
}

func (s *State) alterConfigs(ac *AlterConfigs) Outcome {
	if ac.Broker {
		return s.alterBrokerConfigs(ac)
	}
	t := s.Topics[ac.Name]
	if t == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	next := map[string]string{}
	if !ac.Replace {
		for k, v := range t.Configs {
			next[k] = v
		}
	}
	for k, v := range ac.Set {
		next[k] = v
	}
	for _, k := range ac.Delete {
		delete(next, k)
	}
	if err := ValidateConfigs(next, t.ReplicationFactor); err != nil {
		return Outcome{Err: err}
	}
	if !ac.ValidateOnly {
		t.Configs = next
	}
	return Outcome{Topic: t}
}

func (s *State) alterBrokerConfigs(ac *AlterConfigs) Outcome {
	if ac.Name != "" {
		id, err := strconv.ParseInt(ac.Name, 10, 32)
		if _, known := s.Brokers[int32(id)]; err != nil || !known {
			return Outcome{Err: kerr.InvalidRequest}
		}
	}
	next := map[string]string{}
	if !ac.Replace {
		for k, v := range s.BrokerConfigs[ac.Name] {
			next[k] = v
		}
	}
	for k, v := range ac.Set {
		next[k] = v
	}
	for _, k := range ac.Delete {
		delete(next, k)
	}
	for k, v := range next {
		if valid, ok := brokerConfigs[k]; !ok || !valid(v) {
			return Outcome{Err: kerr.InvalidConfig}
		}
	}
	if ac.ValidateOnly {
		return Outcome{}
	}
	if s.BrokerConfigs == nil {
		s.BrokerConfigs = map[string]map[string]string{}
	}
	if len(next) == 0 {
		delete(s.BrokerConfigs, ac.Name)
	} else {
		s.BrokerConfigs[ac.Name] = next
	}
	return Outcome{}
}

// BrokerConfig returns a broker config set at run time for broker id, or
// for every broker, and whether one is.
func (s *State) BrokerConfig(id int32, key string) (string, bool) {
	if v, ok := s.BrokerConfigs[strconv.Itoa(int(id))][key]; ok {
		return v, true
	}
	v, ok := s.BrokerConfigs[""][key]
	return v, ok
}

func (s *State) setLeader(l *LeaderChange) Outcome {
	_, p := s.PartitionOfShard(l.Shard)
	if p == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	if l.Epoch >= p.LeaderEpoch {
		p.Leader, p.LeaderEpoch, p.LeaderNode = l.Leader, l.Epoch, l.Node
	}
	return Outcome{}
}

// topicID derives a stable, unique id from the name and the creating entry,
// since the state machine may not draw random numbers.
func topicID(name string, index uint64) [16]byte {
	sum := sha256.Sum256([]byte(name + "\x00" + strconv.FormatUint(index, 10)))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x40 // shaped like a version-4 UUID
	id[8] = id[8]&0x3f | 0x80
	return id
}
