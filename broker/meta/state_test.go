package meta

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func clusterOf(n int32) *State {
	s := NewState()
	for id := int32(0); id < n; id++ {
		s.Apply(uint64(id+1), &Command{RegisterBroker: &Broker{ID: id, Host: "127.0.0.1", Port: 9092 + id, RaftAddr: "r"}})
	}
	return s
}

func TestCreateTopicPlacesReplicasOnDistinctBrokersAndSpreadsLeaders(t *testing.T) {
	s := clusterOf(3)
	out := s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "orders", Partitions: 6, ReplicationFactor: 3}})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	preferred := map[int32]int{}
	shards := map[uint64]bool{}
	for _, p := range s.topics["orders"].Partitions {
		seen := map[int32]bool{}
		for _, r := range p.Replicas {
			if seen[r] {
				t.Fatalf("partition %d has broker %d twice: %v", p.Index, r, p.Replicas)
			}
			seen[r] = true
		}
		if shards[p.Shard] || p.Shard < FirstPartitionShard {
			t.Fatalf("partition %d shard %d reused or reserved", p.Index, p.Shard)
		}
		shards[p.Shard] = true
		preferred[p.Replicas[0]]++
	}
	for id := int32(0); id < 3; id++ {
		if preferred[id] != 2 {
			t.Fatalf("preferred leaders per broker %v, want 2 each", preferred)
		}
	}
}

func TestTopicCommandsValidate(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"rf above brokers", Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 1, ReplicationFactor: 4}}, kerr.InvalidReplicationFactor},
		{"zero partitions", Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 0, ReplicationFactor: 1}}, kerr.InvalidPartitions},
		{"bad name", Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a/b", Partitions: 1, ReplicationFactor: 1}}, kerr.InvalidTopicException},
		{"unknown config", Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"bogus": "1"}}}, kerr.InvalidConfig},
		{"min isr above rf", Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 1, ReplicationFactor: 2, Configs: map[string]string{ConfigMinInsyncReplicas: "3"}}}, kerr.InvalidConfig},
		{"unknown cleanup policy", Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{ConfigCleanupPolicy: "compact,archive"}}}, kerr.InvalidConfig},
		{"dirty ratio above 1", Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{ConfigMinCleanableRatio: "1.5"}}}, kerr.InvalidConfig},
		{"exists", Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "taken", Partitions: 1, ReplicationFactor: 1}}, kerr.TopicAlreadyExists},
		{"shrink", Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "taken", Count: 1}}, kerr.InvalidPartitions},
		{"grow unknown", Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "nope", Count: 3}}, kerr.UnknownTopicOrPartition},
		{"alter bad value", Command{AlterConfigs: &AlterConfigs{Name: "taken", Set: map[string]string{ConfigRetentionMs: "soon"}}}, kerr.InvalidConfig},
		{"delete unknown", Command{DeleteTopic: "nope"}, kerr.UnknownTopicOrPartition},
		{"empty command", Command{}, kerr.InvalidRequest},
	}
	for _, c := range cases {
		s := clusterOf(3)
		s.Apply(9, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "taken", Partitions: 2, ReplicationFactor: 1}})
		before := s.nextShard
		if got := s.Apply(10, &c.cmd).Err; got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
		if s.nextShard != before || len(s.topics) != 1 {
			t.Errorf("%s: a rejected command changed the state", c.name)
		}
	}
}

func TestValidateOnlyChangesNothing(t *testing.T) {
	s := clusterOf(3)
	if out := s.Apply(5, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 3, ReplicationFactor: 3, ValidateOnly: true}}); out.Err != nil || out.Topic == nil {
		t.Fatalf("validate only: %+v", out)
	}
	if len(s.topics) != 0 || s.nextShard != FirstPartitionShard {
		t.Fatalf("validate-only create left state behind: %d topics, next shard %d", len(s.topics), s.nextShard)
	}
}

func TestLeaderChangesOnlyMoveForward(t *testing.T) {
	s := clusterOf(3)
	s.Apply(5, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 1, ReplicationFactor: 3}})
	shard := s.topics["a"].Partitions[0].Shard
	s.Apply(6, &Command{Leader: &LeaderChange{Shard: shard, Leader: 2, Epoch: 5}})
	s.Apply(7, &Command{Leader: &LeaderChange{Shard: shard, Leader: 1, Epoch: 4}}) // late report of an older term
	if p := s.topics["a"].Partitions[0]; p.Leader != 2 || p.LeaderEpoch != 5 {
		t.Fatalf("leader %d epoch %d, want 2 at 5", p.Leader, p.LeaderEpoch)
	}
}

func TestProducerIDBlocksDoNotOverlap(t *testing.T) {
	s := clusterOf(1)
	a := s.Apply(2, &Command{AllocateProducerIDs: true}).ProducerID
	b := s.Apply(3, &Command{AllocateProducerIDs: true}).ProducerID
	if b-a != ProducerIDBlock {
		t.Fatalf("blocks at %d and %d", a, b)
	}
}

func TestTopicIDsAreDeterministicAndDistinct(t *testing.T) {
	a, b := clusterOf(1), clusterOf(1)
	ida := a.Apply(7, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "x", Partitions: 1, ReplicationFactor: 1}}).Topic.ID
	idb := b.Apply(7, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "x", Partitions: 1, ReplicationFactor: 1}}).Topic.ID
	if ida != idb {
		t.Fatal("replicas derived different topic ids from the same entry")
	}
	a.Apply(8, &Command{DeleteTopic: "x"})
	if again := a.Apply(9, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "x", Partitions: 1, ReplicationFactor: 1}}).Topic.ID; again == ida {
		t.Fatal("a re-created topic reused the old topic id")
	}
}

func TestMetadataVotersRecordAndFallBackToTheFounders(t *testing.T) {
	s := NewState()
	for id := int32(0); id < 3; id++ {
		s.Apply(uint64(id+1), &Command{RegisterBroker: &Broker{ID: id, RaftAddr: "r"}})
	}
	founding := map[int32]string{0: "a", 1: "b"}
	if !s.VotesInMetadata(1, founding) || s.VotesInMetadata(2, founding) {
		t.Fatal("before any voter change the founding voters vote")
	}
	if out := s.Apply(10, &Command{SetMetadataVoters: &SetMetadataVoters{Voters: []int32{2, 0, 2, 1}}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if !reflect.DeepEqual(s.metadataVoters, []int32{0, 1, 2}) || !s.VotesInMetadata(2, founding) {
		t.Fatalf("voters %v", s.metadataVoters)
	}
	for _, bad := range [][]int32{nil, {0, 7}} {
		if out := s.Apply(11, &Command{SetMetadataVoters: &SetMetadataVoters{Voters: bad}}); out.Err == nil {
			t.Fatalf("voters %v accepted", bad)
		}
	}
	if out := s.Apply(12, &Command{SetMetadataVoters: &SetMetadataVoters{Voters: []int32{0, 1}}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if s.VotesInMetadata(2, founding) {
		t.Fatal("a removed voter still votes")
	}
	s.Apply(13, &Command{UnregisterBroker: &UnregisterBroker{ID: 1}})
	if !reflect.DeepEqual(s.metadataVoters, []int32{0}) {
		t.Fatalf("an unregistered broker stays a voter: %v", s.metadataVoters)
	}
}
