package meta

import (
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
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
	Rack     string `json:",omitempty"`
}

// Partition is one partition's placement. Replicas[0] is the preferred leader.
type Partition struct {
	Index       int32
	Shard       uint64
	Replicas    []int32
	Leader      int32
	LeaderEpoch int32
}

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
	Brokers        map[int32]Broker
	Topics         map[string]*Topic
	NextShard      uint64
	NextProducerID int64
	// Offsets: group -> topic -> partition -> offset.
	Offsets map[string]map[string]map[int32]GroupOffset

	// topicsByID indexes Topics by id for Fetch and Produce v13+, which
	// name topics by id in every request; derived, so not in snapshots.
	topicsByID map[[16]byte]*Topic
}

// NewState returns an empty cluster.
func NewState() *State {
	return &State{Brokers: map[int32]Broker{}, Topics: map[string]*Topic{}, NextShard: FirstPartitionShard,
		NextProducerID: 1000, Offsets: map[string]map[string]map[int32]GroupOffset{}, topicsByID: map[[16]byte]*Topic{}}
}

// reindex rebuilds the derived topic-id index, after a snapshot is read.
func (s *State) reindex() {
	s.topicsByID = make(map[[16]byte]*Topic, len(s.Topics))
	for _, t := range s.Topics {
		s.topicsByID[t.ID] = t
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

// Apply applies one command at Raft index index and returns its outcome.
func (s *State) Apply(index uint64, c *Command) Outcome {
	switch {
	case c.RegisterBroker != nil:
		s.Brokers[c.RegisterBroker.ID] = *c.RegisterBroker
		return Outcome{}
	case c.CreateTopic != nil:
		return s.createTopic(index, c.CreateTopic)
	case c.DeleteTopic != "":
		t := s.Topics[c.DeleteTopic]
		if t == nil {
			return Outcome{Err: kerr.UnknownTopicOrPartition}
		}
		delete(s.Topics, c.DeleteTopic)
		delete(s.topicsByID, t.ID)
		return Outcome{Topic: t}
	case c.CreatePartitions != nil:
		return s.createPartitions(c.CreatePartitions)
	case c.AlterConfigs != nil:
		return s.alterConfigs(c.AlterConfigs)
	case c.Leader != nil:
		return s.setLeader(c.Leader)
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

func (s *State) createTopic(index uint64, ct *CreateTopic) Outcome {
	if err := ValidateTopicName(ct.Name); err != nil {
		return Outcome{Err: err}
	}
	if s.Topics[ct.Name] != nil {
		return Outcome{Err: kerr.TopicAlreadyExists}
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
	s.addPartitions(t, ct.Partitions, brokers)
	if !ct.ValidateOnly {
		s.Topics[ct.Name] = t
		s.topicsByID[t.ID] = t
	} else {
		s.NextShard -= uint64(ct.Partitions)
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
	if cp.ValidateOnly {
		return Outcome{Topic: t}
	}
	s.addPartitions(t, cp.Count-int32(len(t.Partitions)), s.BrokerIDs())
	return Outcome{Topic: t}
}

// addPartitions places new partitions round-robin, starting each topic at a
// different broker so that preferred leaders spread across the cluster.
func (s *State) addPartitions(t *Topic, n int32, brokers []int32) {
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

func (s *State) setLeader(l *LeaderChange) Outcome {
	for _, t := range s.Topics {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if p.Shard == l.Shard {
				if l.Epoch >= p.LeaderEpoch {
					p.Leader, p.LeaderEpoch = l.Leader, l.Epoch
				}
				return Outcome{}
			}
		}
	}
	return Outcome{Err: kerr.UnknownTopicOrPartition}
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
