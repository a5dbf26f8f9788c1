package meta

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

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
	// Features name the metadata commands that the broker's version
	// applies and older versions ignore (FeatureOrderedGrowth). A proposer
	// uses one only once every registered broker has it, so that no
	// replica of the metadata ignores it in a rolling upgrade.
	Features []string `json:",omitempty"`
	// MaxReplicas is how many partition replicas the broker has room
	// for, from its open-file limit; 0 where it recorded none.
	MaxReplicas int32 `json:",omitempty"`
}

// The features of this version (Broker.Features).
const (
	FeatureOrderedGrowth = "ordered-growth"
	// FeatureReplicaCapacity: PlacementCapacity and Reassign.Capacity.
	FeatureReplicaCapacity = "replica-capacity"
	// FeatureTransactions: the transaction commands of the metadata and
	// of partitions (docs/design/transactions.md).
	FeatureTransactions = "transactions"
	// FeatureTransactionsV2: KIP-890 part 2 (transaction.version 2), a
	// new epoch per transaction and partitions and groups added by the
	// Produce and TxnOffsetCommit that name them.
	FeatureTransactionsV2 = "transactions.v2"
	// FeatureGrowthDelivered: RecordDelivered, which lets a growth's
	// hold lift when the records below a release end in markers or
	// aborted records.
	FeatureGrowthDelivered = "growth.delivered"
)

// Features lists them, for a broker's registration.
var Features = []string{FeatureOrderedGrowth, FeatureReplicaCapacity, FeatureTransactions, FeatureTransactionsV2, FeatureGrowthDelivered}

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
	// Growths are its ordered growths not lifted yet, oldest first
	// (growth.go); GrowthSeq numbers them; LastLift and ForcedLifts tell
	// its status how the latest ended and how many the bound lifted.
	Growths     []Growth    `json:",omitempty"`
	GrowthSeq   int         `json:",omitempty"`
	LastLift    *GrowthLift `json:",omitempty"`
	ForcedLifts int         `json:",omitempty"`
}

// GroupOffset is a committed consumer-group offset.
type GroupOffset struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string `json:",omitempty"`
	// CommittedAt is when the coordinator took the commit (Unix
	// milliseconds, its clock, proposed with the command); 0 for a commit
	// from before it was recorded. Ordered growth counts the groups that
	// committed on a topic lately (docs/design/ordered-growth.md).
	CommittedAt int64 `json:",omitempty"`
}

// State is the whole replicated metadata. Its fields are private: readers
// ask it named questions (queries.go), so that what the metadata holds can
// change shape without its readers changing, and no reader can change it
// outside a command.
type State struct {
	// clusterID is the cluster's id, given at the first registration; a
	// data directory records the cluster it belongs to.
	clusterID string
	brokers   map[int32]Broker
	topics    map[string]*Topic
	nextShard uint64
	// nextNodeEpoch is the epoch of the next partition replica nodes
	// placed (RaftNodeID); 0 in a state from before, read as 1.
	nextNodeEpoch uint32
	// retired holds the last generation of each unregistered broker id,
	// so that a broker given that id again never reuses a metadata node.
	retired map[int32]uint32
	// metadataVoters are the brokers that vote in the metadata group,
	// sorted; nil until a voter was first added or removed, while the
	// founding voters (--metadata-voters) are the voters.
	metadataVoters []int32
	nextProducerID int64
	// brokerConfigs are broker configs set at run time: broker id (or ""
	// for every broker) -> key -> value.
	brokerConfigs map[string]map[string]string
	// offsets: group -> topic -> partition -> offset.
	offsets map[string]map[string]map[int32]GroupOffset
	// groupMetadata: each group's membership as its coordinator last
	// recorded it; offsetsLog: __consumer_offsets (offsetstopic.go).
	groupMetadata map[string]GroupMetadata
	offsetsLog    offsetsLog
	// scramCredentials: user -> mechanism -> credential (scram.go).
	scramCredentials map[string]map[string]ScramCredential
	// acls are the authorizer's bindings, in the order they were made
	// (acls.go).
	acls []acl.Binding
	// clientQuotas are the client quota configs, in the order their
	// entities were first given one (quotas.go).
	clientQuotas []quota.Config
	// transactions are the transaction coordinator's state, by
	// transactional id (txn.go).
	transactions map[string]*Transaction

	// txnByProducer indexes transactions by producer id, for the
	// partition leaders' check of a transactional batch; derived.
	txnByProducer map[int64]string
	// txnActive indexes the transactions that are open or ending, so
	// that the loops that end them do not walk every transactional id
	// at every metadata change.
	txnActive map[string]struct{}
	// topicsByID indexes topics by id for Fetch and Produce v13+, which
	// name topics by id in every request; derived, so not in snapshots.
	topicsByID map[[16]byte]*Topic
	// shards indexes partitions by their Raft shard; derived too.
	shards map[uint64]shardRef
}

// snapshotState is State as snapshots carry it. Its field names are the
// snapshot format, which data directories hold, so they stay as they are
// whatever State's own fields are called.
type snapshotState struct {
	ClusterID        string `json:",omitempty"`
	Brokers          map[int32]Broker
	Topics           map[string]*Topic
	NextShard        uint64
	NextNodeEpoch    uint32           `json:",omitempty"`
	Retired          map[int32]uint32 `json:",omitempty"`
	MetadataVoters   []int32          `json:",omitempty"`
	NextProducerID   int64
	BrokerConfigs    map[string]map[string]string `json:",omitempty"`
	Offsets          map[string]map[string]map[int32]GroupOffset
	ScramCredentials map[string]map[string]ScramCredential `json:",omitempty"`
	ACLs             []acl.Binding                         `json:",omitempty"`
	ClientQuotas     []quota.Config                        `json:",omitempty"`
	GroupMetadata    map[string]GroupMetadata              `json:",omitempty"`
	OffsetsLog       *offsetsLog                           `json:",omitempty"`
	Transactions     map[string]*Transaction               `json:",omitempty"`
}

func (s *State) snapshot() snapshotState {
	return snapshotState{ClusterID: s.clusterID, Brokers: s.brokers, Topics: s.topics, NextShard: s.nextShard, NextNodeEpoch: s.nextNodeEpoch,
		Retired: s.retired, MetadataVoters: s.metadataVoters, NextProducerID: s.nextProducerID, BrokerConfigs: s.brokerConfigs,
		Offsets: s.offsets, ScramCredentials: s.scramCredentials, ACLs: s.acls, ClientQuotas: s.clientQuotas,
		GroupMetadata: s.groupMetadata, OffsetsLog: s.offsetsLogSnapshot(), Transactions: s.transactions}
}

// MarshalJSON writes the state as a snapshot carries it.
func (s *State) MarshalJSON() ([]byte, error) { return json.Marshal(s.snapshot()) }

// UnmarshalJSON reads a snapshot over the state, as decoding into its
// fields would: maps it already has are added to.
func (s *State) UnmarshalJSON(data []byte) error {
	j := s.snapshot()
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	s.clusterID, s.brokers, s.topics, s.nextShard, s.nextNodeEpoch = j.ClusterID, j.Brokers, j.Topics, j.NextShard, j.NextNodeEpoch
	s.retired, s.metadataVoters, s.nextProducerID, s.brokerConfigs = j.Retired, j.MetadataVoters, j.NextProducerID, j.BrokerConfigs
	s.offsets, s.scramCredentials, s.acls, s.clientQuotas = j.Offsets, j.ScramCredentials, j.ACLs, j.ClientQuotas
	s.groupMetadata, s.transactions = j.GroupMetadata, j.Transactions
	s.reindexTxns()
	if j.OffsetsLog != nil {
		s.offsetsLog = *j.OffsetsLog
		s.offsetsLog.index = nil // rebuilt at the next record
		s.offsetsLog.reindex()
	}
	return nil
}

// shardRef locates a partition: its topic and index.
type shardRef struct {
	topic *Topic
	index int
}

// NewState returns an empty cluster.
func NewState() *State {
	return &State{brokers: map[int32]Broker{}, topics: map[string]*Topic{}, nextShard: FirstPartitionShard,
		nextProducerID: 1000, offsets: map[string]map[string]map[int32]GroupOffset{}, topicsByID: map[[16]byte]*Topic{}, shards: map[uint64]shardRef{}}
}

// reindex rebuilds the derived topic-id index, after a snapshot is read.
func (s *State) reindex() {
	s.topicsByID = make(map[[16]byte]*Topic, len(s.topics))
	s.shards = map[uint64]shardRef{}
	for _, t := range s.topics {
		s.topicsByID[t.ID] = t
		s.indexShards(t)
	}
}

func (s *State) indexShards(t *Topic) {
	for i, p := range t.Partitions {
		s.shards[p.Shard] = shardRef{topic: t, index: i}
	}
}

// commitOffsets makes a group's offsets committed; a nonzero at is when
// they were, for offsets that do not say (a transaction's).
func (s *State) commitOffsets(co *CommitOffsets, at int64) {
	g := s.offsets[co.Group]
	if g == nil {
		g = map[string]map[int32]GroupOffset{}
		s.offsets[co.Group] = g
	}
	for topic, parts := range co.Offsets {
		if g[topic] == nil {
			g[topic] = map[int32]GroupOffset{}
		}
		for p, o := range parts {
			if at != 0 && o.CommittedAt == 0 {
				o.CommittedAt = at
			}
			g[topic][p] = o
		}
	}
	s.recordCommits(co)
}

// Apply applies one command at Raft index index and returns its outcome.
func (s *State) Apply(index uint64, c *Command) Outcome {
	if out, ok := s.applyTxn(c); ok {
		return out
	}
	switch {
	case c.RegisterBroker != nil:
		return s.registerBroker(index, c.RegisterBroker)
	case c.JoinBroker != nil:
		return s.joinBroker(index, c.JoinBroker)
	case c.CreateTopic != nil:
		return s.createTopic(index, c.CreateTopic)
	case c.DeleteTopic != "":
		t := s.topics[c.DeleteTopic]
		if t == nil {
			return Outcome{Err: kerr.UnknownTopicOrPartition}
		}
		delete(s.topics, c.DeleteTopic)
		delete(s.topicsByID, t.ID)
		for _, p := range t.Partitions {
			delete(s.shards, p.Shard)
		}
		return Outcome{Topic: t}
	case c.CreatePartitions != nil:
		return s.createPartitions(c.CreatePartitions)
	case c.RecordSplit != nil:
		return s.recordSplit(c.RecordSplit)
	case c.AdvanceHold != nil:
		return s.advanceHold(c.AdvanceHold)
	case c.RecordDelivered != nil:
		return s.recordDelivered(c.RecordDelivered)
	case c.LiftGrowth != nil:
		return s.liftGrowth(c.LiftGrowth)
	case c.NoteGroups != nil:
		return s.noteGroups(c.NoteGroups)
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
		first := s.nextProducerID
		s.nextProducerID += ProducerIDBlock
		return Outcome{ProducerID: first}
	case c.CommitOffsets != nil:
		s.commitOffsets(c.CommitOffsets, 0)
		return Outcome{}
	case c.RecordGroupMetadata != nil:
		return s.recordGroupMetadata(c.RecordGroupMetadata)
	case c.DeleteGroup != "":
		if _, ok := s.offsets[c.DeleteGroup]; !ok {
			return Outcome{Err: kerr.GroupIDNotFound}
		}
		s.deleteGroupState(c.DeleteGroup)
		delete(s.offsets, c.DeleteGroup)
		return Outcome{}
	case c.DeleteOffsets != nil:
		s.recordDeletedOffsets(c.DeleteOffsets.Group, c.DeleteOffsets.Partitions)
		g := s.offsets[c.DeleteOffsets.Group]
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
	cur, known := s.brokers[b.ID]
	switch {
	case !known && b.Generation != 0:
		return Outcome{Err: kerr.StaleBrokerEpoch}
	case known && cur.Generation != b.Generation:
		return Outcome{Err: kerr.StaleBrokerEpoch}
	case known && cur.Incarnation != "" && cur.Incarnation != b.Incarnation:
		return Outcome{Err: kerr.StaleBrokerEpoch}
	}
	s.brokers[b.ID] = *b
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
	cur, known := s.brokers[b.ID]
	next := *b
	switch {
	case known && cur.Incarnation == b.Incarnation && b.Incarnation != "":
		next.Generation = cur.Generation
	case known:
		next.Generation = cur.Generation + 1
	default:
		next.Generation = s.retired[b.ID] + 1
		delete(s.retired, b.ID)
		if len(s.retired) == 0 {
			s.retired = nil // as a snapshot restores it
		}
	}
	if !known || cur.Incarnation != b.Incarnation || b.Incarnation == "" {
		s.renewNodes(b.ID)
	}
	s.brokers[b.ID] = next
	s.foundCluster(index, &next)
	return Outcome{Broker: &next}
}

// unregisterBroker forgets a broker that left for good; refused while it
// holds a partition replica, a move's target included.
func (s *State) unregisterBroker(c *UnregisterBroker) Outcome {
	b, known := s.brokers[c.ID]
	if !known {
		return Outcome{Err: kerr.BrokerIDNotRegistered}
	}
	if s.HostsReplicas(c.ID) {
		return Outcome{Err: kerr.InvalidRequest}
	}
	delete(s.brokers, c.ID)
	if s.retired == nil {
		s.retired = map[int32]uint32{}
	}
	s.retired[c.ID] = b.Generation
	if s.metadataVoters != nil {
		s.metadataVoters = slices.DeleteFunc(s.metadataVoters, func(id int32) bool { return id == c.ID })
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
		if _, ok := s.brokers[id]; !ok {
			return Outcome{Err: kerr.BrokerIDNotRegistered}
		}
	}
	s.metadataVoters = voters
	return Outcome{}
}

// foundCluster names the cluster at its first registration, from the
// entry's index and the registering incarnation, since the state machine
// may not draw random numbers.
func (s *State) foundCluster(index uint64, b *Broker) {
	if s.clusterID != "" {
		return
	}
	sum := sha256.Sum256([]byte(b.Incarnation + "\x00" + strconv.FormatUint(index, 10)))
	s.clusterID = base64.RawURLEncoding.EncodeToString(sum[:16])
}

func (s *State) createTopic(index uint64, ct *CreateTopic) Outcome {
	if err := ValidateTopicName(ct.Name); err != nil {
		return Outcome{Err: err}
	}
	if s.topics[ct.Name] != nil || ct.Name == OffsetsTopic { // the internal topic always exists
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
	nextShard, nextEpoch := s.nextShard, s.nextNodeEpoch
	if err := s.addPartitions(t, ct.Partitions, ct.Assignment, ct.Placement); err != nil {
		return Outcome{Err: err}
	}
	if !ct.ValidateOnly {
		s.topics[ct.Name] = t
		s.topicsByID[t.ID] = t
		s.indexShards(t)
	} else {
		s.nextShard, s.nextNodeEpoch = nextShard, nextEpoch
	}
	return Outcome{Topic: t}
}

func (s *State) createPartitions(cp *CreatePartitions) Outcome {
	t := s.topics[cp.Name]
	if t == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	if cp.Count == int32(len(t.Partitions)) && t.VisiblePartitions() < cp.Count {
		return Outcome{Topic: t} // asked again while the growth is hidden
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
		// Placed but not added, so that a broker without room refuses
		// the dry run as it would the growth.
		if cp.Placement != PlacementLegacy || cp.Assignment != nil {
			if _, err := s.placeNew(t, cp.Count-int32(len(t.Partitions)), cp.Assignment, cp.Placement); err != nil {
				return Outcome{Err: err}
			}
		}
		return Outcome{Topic: t}
	}
	from := int32(len(t.Partitions))
	if err := s.addPartitions(t, cp.Count-from, cp.Assignment, cp.Placement); err != nil {
		return Outcome{Err: err}
	}
	s.indexShards(t)
	if cp.Ordered {
		s.startGrowth(t, from, cp)
	}
	return Outcome{Topic: t}
}

// addPartitions adds n partitions to t, placed as assignment says or, if
// it is nil, by the placement rules the command asked for; under
// PlacementCapacity it adds none if a broker has no room for them.
func (s *State) addPartitions(t *Topic, n int32, assignment [][]int32, placement int) error {
	if placement == PlacementLegacy && assignment == nil {
		s.addLegacyPartitions(t, n)
		return nil
	}
	assignment, err := s.placeNew(t, n, assignment, placement)
	if err != nil {
		return err
	}
	for _, replicas := range assignment {
		idx := int32(len(t.Partitions))
		epoch := s.takeNodeEpoch()
		nodes := make([]uint64, len(replicas))
		for r, id := range replicas {
			nodes[r] = RaftNodeID(id, epoch)
		}
		t.Partitions = append(t.Partitions, Partition{Index: idx, Shard: s.nextShard, Replicas: append([]int32(nil), replicas...), Leader: -1,
			Nodes: nodes, Founders: append([]uint64(nil), nodes...)})
		s.nextShard++
	}
	return nil
}

// placeNew returns where n new partitions of t go, as assignment says
// or, if it is nil, by the placement rules the command asked for; under
// PlacementCapacity, an error if a broker has no room for them. It
// changes nothing.
func (s *State) placeNew(t *Topic, n int32, assignment [][]int32, placement int) ([][]int32, error) {
	capacity := placement >= PlacementCapacity
	switch {
	case assignment == nil:
		return s.placeReplicas(t, int(n), int(t.ReplicationFactor), capacity)
	case capacity:
		return assignment, s.fitAssignment(assignment)
	}
	return assignment, nil
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
		t.Partitions = append(t.Partitions, Partition{Index: idx, Shard: s.nextShard, Replicas: replicas, Leader: -1})
		s.nextShard++
	}
}

func (s *State) alterConfigs(ac *AlterConfigs) Outcome {
	if ac.Broker {
		return s.alterBrokerConfigs(ac)
	}
	t := s.topics[ac.Name]
	if t == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	next := ac.appliedTo(t.Configs)
	if err := ValidateConfigs(next, t.ReplicationFactor); err != nil {
		return Outcome{Err: err}
	}
	if !ac.ValidateOnly {
		t.Configs = next
	}
	return Outcome{Topic: t}
}

// appliedTo is configs with ac's changes.
func (ac *AlterConfigs) appliedTo(configs map[string]string) map[string]string {
	next := map[string]string{}
	if !ac.Replace {
		maps.Copy(next, configs)
	}
	maps.Copy(next, ac.Set)
	for _, k := range ac.Delete {
		delete(next, k)
	}
	return next
}

// AlterConfigsProblem says, naming the key, what alterConfigs would
// refuse in ac as invalid configs; "" for nothing (or for another
// refusal, such as a topic that is not there).
func (s *State) AlterConfigsProblem(ac *AlterConfigs) string {
	if ac.Broker {
		return brokerConfigProblem(ac.appliedTo(s.brokerConfigs[ac.Name]))
	}
	t := s.topics[ac.Name]
	if t == nil {
		return ""
	}
	return ConfigProblem(ac.appliedTo(t.Configs), t.ReplicationFactor)
}

// brokerConfigProblem says what is wrong with a broker's configs.
func brokerConfigProblem(configs map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		check, ok := brokerConfigs[k]
		if !ok {
			return fmt.Sprintf("unknown broker config %s: those that can be set are %s, in bytes per second", k, strings.Join(BrokerConfigNames(), " and "))
		}
		if why := check(configs[k]); why != "" {
			return fmt.Sprintf("invalid value %q for %s: %s", configs[k], k, why)
		}
	}
	return ""
}

func (s *State) alterBrokerConfigs(ac *AlterConfigs) Outcome {
	if ac.Name != "" {
		id, err := strconv.ParseInt(ac.Name, 10, 32)
		if _, known := s.brokers[int32(id)]; err != nil || !known {
			return Outcome{Err: kerr.InvalidRequest}
		}
	}
	next := ac.appliedTo(s.brokerConfigs[ac.Name])
	if brokerConfigProblem(next) != "" {
		return Outcome{Err: kerr.InvalidConfig}
	}
	if ac.ValidateOnly {
		return Outcome{}
	}
	if s.brokerConfigs == nil {
		s.brokerConfigs = map[string]map[string]string{}
	}
	if len(next) == 0 {
		delete(s.brokerConfigs, ac.Name)
	} else {
		s.brokerConfigs[ac.Name] = next
	}
	return Outcome{}
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
