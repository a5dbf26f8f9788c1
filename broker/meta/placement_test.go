package meta

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestPlacementSpreadsOverRacksAndLoad(t *testing.T) {
	s := NewState()
	racks := []string{"a", "a", "b", "b", "c", "c"}
	for id := int32(0); id < 6; id++ {
		s.Apply(uint64(id+1), &Command{RegisterBroker: &Broker{ID: id, RaftAddr: "r", Rack: racks[id]}})
	}
	if out := s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "t", Partitions: 12, ReplicationFactor: 3}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	load, leads := map[int32]int{}, map[int32]int{}
	for _, p := range s.topics["t"].Partitions {
		seen := map[string]bool{}
		for i, id := range p.Replicas {
			if seen[racks[id]] {
				t.Fatalf("partition %d has two replicas on rack %s: %v", p.Index, racks[id], p.Replicas)
			}
			seen[racks[id]] = true
			load[id]++
			if i == 0 {
				leads[id]++
			}
		}
	}
	// Greedy placement under the rack rule may leave a broker one
	// replica above the mean; leaders spread exactly.
	for id := int32(0); id < 6; id++ {
		if load[id] < 5 || load[id] > 7 || leads[id] != 2 {
			t.Fatalf("broker %d holds %d replicas and leads %d, want 6±1 and 2: %v %v", id, load[id], leads[id], load, leads)
		}
	}
	// A broker added later takes the next partitions' replicas first.
	s.Apply(20, &Command{RegisterBroker: &Broker{ID: 6, RaftAddr: "r", Rack: "d"}})
	if out := s.Apply(21, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "t", Count: 14}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	for _, p := range s.topics["t"].Partitions[12:] {
		if !slices.Contains(p.Replicas, 6) {
			t.Errorf("new partition %d on %v leaves out the empty broker 6", p.Index, p.Replicas)
		}
	}
}

func TestManualAssignment(t *testing.T) {
	s := clusterOf(3)
	bad := [][][]int32{{}, {{}}, {{0, 0}}, {{0, 7}}, {{0, 1}, {2}}}
	for _, a := range bad {
		if out := s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "m", Assignment: a}}); !errors.Is(out.Err, kerr.InvalidReplicaAssignment) {
			t.Errorf("assignment %v: %v, want INVALID_REPLICA_ASSIGNMENT", a, out.Err)
		}
	}
	if s.topics["m"] != nil {
		t.Fatal("a refused assignment created the topic")
	}
	out := s.Apply(11, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "m", Assignment: [][]int32{{2, 0}, {1, 2}}}})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	m := s.topics["m"]
	if m.ReplicationFactor != 2 || len(m.Partitions) != 2 || m.Partitions[0].Replicas[0] != 2 || m.Partitions[1].Replicas[1] != 2 {
		t.Fatalf("placed %+v", m.Partitions)
	}
	if out := s.Apply(12, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "m", Count: 4, Assignment: [][]int32{{0, 1}}}}); !errors.Is(out.Err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("one assignment for two new partitions: %v", out.Err)
	}
	if out := s.Apply(13, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "m", Count: 3, Assignment: [][]int32{{0, 1, 2}}}}); !errors.Is(out.Err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("a new partition with another replica count: %v", out.Err)
	}
	if out := s.Apply(14, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "m", Count: 3, Assignment: [][]int32{{0, 1}}}}); out.Err != nil || m.Partitions[2].Replicas[0] != 0 {
		t.Fatalf("assigned new partition: %v %v", out.Err, m.Partitions)
	}
}

// TestCommandsFromBeforeEpochsReplayAsApplied: a CreateTopic or
// CreatePartitions from a metadata log written before placement epochs
// (Placement 0) places its partitions round-robin with nodes at epoch 0,
// as the version that applied it first did: their Raft groups exist with
// those nodes.
func TestCommandsFromBeforeEpochsReplayAsApplied(t *testing.T) {
	s := clusterOf(3)
	if out := s.Apply(10, &Command{CreateTopic: &CreateTopic{Name: "old", Partitions: 3, ReplicationFactor: 2}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	s.Apply(11, &Command{CreatePartitions: &CreatePartitions{Name: "old", Count: 4}})
	if s.nextNodeEpoch != 0 {
		t.Fatalf("legacy commands took node epochs: next %d", s.nextNodeEpoch)
	}
	seed := int(binary.BigEndian.Uint32(s.topics["old"].ID[:4]) % 3)
	for _, p := range s.topics["old"].Partitions {
		want := []int32{int32((seed + int(p.Index)) % 3), int32((seed + int(p.Index) + 1) % 3)}
		if !slices.Equal(p.Replicas, want) || p.Nodes != nil || p.Founders != nil || p.NodeOf(want[0]) != RaftNodeID(want[0], 0) {
			t.Fatalf("partition %d: replicas %v nodes %v founders %v, want %v at epoch 0", p.Index, p.Replicas, p.Nodes, p.Founders, want)
		}
	}
}

// TestPlacementKeepsToEachBrokersReplicaLimit: under PlacementCapacity a
// broker takes no replica past the limit it registered, a topic that does
// not fit is refused whole, a growth that does not fit too (its dry run
// as well), and a move onto a full broker is refused; the
// rules of commands from before place as they did.
func TestPlacementKeepsToEachBrokersReplicaLimit(t *testing.T) {
	limits := []int32{4, 10, 0, 10} // 0: none recorded
	setup := func() *State {
		s := NewState()
		for id, m := range limits {
			s.Apply(uint64(id+1), &Command{RegisterBroker: &Broker{ID: int32(id), RaftAddr: "r", MaxReplicas: m}})
		}
		return s
	}
	s := setup()
	if out := s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementCapacity, Name: "a", Partitions: 8, ReplicationFactor: 2}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if out := s.Apply(11, &Command{CreateTopic: &CreateTopic{Placement: PlacementCapacity, Name: "b", Partitions: 6, ReplicationFactor: 3}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	counts := s.ReplicaCounts()
	for id, m := range limits {
		if m > 0 && counts[int32(id)] > int(m) {
			t.Fatalf("broker %d holds %d replicas, past its limit of %d: %v", id, counts[int32(id)], m, counts)
		}
	}
	// With RF 3, each of c's partitions needs two of brokers 0, 1 and 3,
	// whose limits add up to 24 replicas in all: 40 do not fit.
	before := s.ReplicaCounts()
	out := s.Apply(12, &Command{CreateTopic: &CreateTopic{Placement: PlacementCapacity, Name: "c", Partitions: 20, ReplicationFactor: 3}})
	if !errors.Is(out.Err, kerr.PolicyViolation) || s.topics["c"] != nil {
		t.Fatalf("a topic past the brokers' room: %v, topic %v, want POLICY_VIOLATION and no topic", out.Err, s.topics["c"])
	}
	if after := s.ReplicaCounts(); !maps.Equal(before, after) {
		t.Fatalf("a refused topic changed the counts: %v -> %v", before, after)
	}
	// A growth past the room is refused, its dry run (validateOnly) too.
	for _, dry := range []bool{true, false} {
		grow := &CreatePartitions{Placement: PlacementCapacity, Name: "b", Count: 26, ValidateOnly: dry}
		if out := s.Apply(12, &Command{CreatePartitions: grow}); !errors.Is(out.Err, kerr.PolicyViolation) || len(s.topics["b"].Partitions) != 6 {
			t.Fatalf("growing b past the brokers' room (validateOnly %v): %v, %d partitions, want POLICY_VIOLATION and 6", dry, out.Err, len(s.topics["b"].Partitions))
		}
	}
	roomy := setup()
	roomy.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementCapacity, Name: "b", Partitions: 6, ReplicationFactor: 3}})
	if out := roomy.Apply(11, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementCapacity, Name: "b", Count: 7, ValidateOnly: true}}); out.Err != nil || len(roomy.topics["b"].Partitions) != 6 {
		t.Fatalf("a dry run of a growth that fits: %v, %d partitions, want none and 6", out.Err, len(roomy.topics["b"].Partitions))
	}
	full := int32(0)
	if out := s.Apply(13, &Command{CreateTopic: &CreateTopic{Placement: PlacementCapacity, Name: "m", Assignment: [][]int32{{full, 2}}}}); !errors.Is(out.Err, kerr.PolicyViolation) {
		t.Fatalf("a manual assignment onto full broker 0: %v", out.Err)
	}
	var onTwo *Partition
	for i, p := range s.topics["a"].Partitions {
		if !slices.Contains(p.Replicas, full) {
			onTwo = &s.topics["a"].Partitions[i]
			break
		}
	}
	target := append([]int32{full}, onTwo.Replicas[1:]...)
	if out := s.Apply(14, &Command{Reassign: &Reassign{Topic: "a", Partition: onTwo.Index, Target: target, Capacity: true}}); !errors.Is(out.Err, kerr.PolicyViolation) {
		t.Fatalf("a move onto full broker 0: %v", out.Err)
	}
	// Commands from before the limit replay as they were placed then.
	if out := s.Apply(15, &Command{Reassign: &Reassign{Topic: "a", Partition: onTwo.Index, Target: target}}); out.Err != nil {
		t.Fatalf("a move from before the limit: %v", out.Err)
	}
	old := setup()
	if out := old.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "a", Partitions: 12, ReplicationFactor: 3}}); out.Err != nil || old.ReplicaCounts()[0] <= 4 {
		t.Fatalf("PlacementEpochs heeded a limit: %v %v", out.Err, old.ReplicaCounts())
	}
}
