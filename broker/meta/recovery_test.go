package meta

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRecoverPartitionNeedsALostQuorum(t *testing.T) {
	s := clusterOf(5)
	if out := s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "t", Partitions: 1, ReplicationFactor: 3}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	p := &s.topics["t"].Partitions[0]
	voters := append([]uint64(nil), p.Nodes...)
	survivor := p.Nodes[0]
	before := append([]uint64(nil), p.Nodes...)
	refused := []struct {
		name string
		c    RecoverPartition
		want error
	}{
		{"unknown partition", RecoverPartition{Shard: 999, Node: survivor, Voters: voters}, kerr.UnknownTopicOrPartition},
		{"every voter intact", RecoverPartition{Shard: p.Shard, Node: survivor, Voters: voters}, kerr.InvalidRequest},
		{"node not a voter", RecoverPartition{Shard: p.Shard, Node: survivor, Voters: voters[1:]}, kerr.EligibleLeadersNotAvailable},
		{"no voters", RecoverPartition{Shard: p.Shard, Node: survivor}, kerr.EligibleLeadersNotAvailable},
	}
	for _, c := range refused {
		if out := s.Apply(11, &Command{RecoverPartition: &c.c}); !errors.Is(out.Err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, out.Err, c.want)
		}
		if !reflect.DeepEqual(p.Nodes, before) || p.Recovery != nil {
			t.Fatalf("%s changed the partition: %v %+v", c.name, p.Nodes, p.Recovery)
		}
	}

	// Two of the three voters lost their disks: their brokers have new
	// nodes in the partition.
	s.Apply(12, &Command{JoinBroker: &Broker{ID: p.Replicas[1], RaftAddr: "r", Incarnation: "new-1"}})
	s.Apply(13, &Command{JoinBroker: &Broker{ID: p.Replicas[2], RaftAddr: "r", Incarnation: "new-2"}})
	if p.HasIntactQuorum(voters) {
		t.Fatal("one intact voter of three counts as a quorum")
	}
	if out := s.Apply(14, &Command{RecoverPartition: &RecoverPartition{Shard: p.Shard, Node: voters[1], Voters: voters}}); !errors.Is(out.Err, kerr.EligibleLeadersNotAvailable) {
		t.Fatalf("recovery from a replaced node: %v", out.Err)
	}
	renewed := append([]uint64(nil), p.Nodes...)
	if out := s.Apply(15, &Command{RecoverPartition: &RecoverPartition{Shard: p.Shard, Node: survivor, Voters: voters, CommittedEnd: 2000}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if p.Nodes[0] != survivor || p.Recovery == nil || p.Recovery.Node != survivor || p.Recovery.Done {
		t.Fatalf("after the recovery: nodes %v, recovery %+v", p.Nodes, p.Recovery)
	}
	for i := 1; i < 3; i++ {
		if p.Nodes[i] == renewed[i] || BrokerOfNode(p.Nodes[i]) != p.Replicas[i] {
			t.Errorf("replica %d keeps node %x: every replica but the survivor joins the recovered group anew", p.Replicas[i], p.Nodes[i])
		}
	}
	// A retry changes nothing; another survivor is refused until done.
	nodes := append([]uint64(nil), p.Nodes...)
	if out := s.Apply(16, &Command{RecoverPartition: &RecoverPartition{Shard: p.Shard, Node: survivor, Voters: voters}}); out.Err != nil || !reflect.DeepEqual(p.Nodes, nodes) {
		t.Fatalf("retry: %v, nodes %v", out.Err, p.Nodes)
	}
	if out := s.Apply(17, &Command{CompleteRecovery: &CompleteRecovery{Shard: p.Shard, Node: voters[1], RecoveredEnd: 1}}); !errors.Is(out.Err, kerr.InvalidRequest) {
		t.Fatalf("completion by another node: %v", out.Err)
	}
	if out := s.Apply(18, &Command{CompleteRecovery: &CompleteRecovery{Shard: p.Shard, Node: survivor, RecoveredEnd: 2010}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if got := *p.Recovery; !got.Done || got.RecoveredEnd != 2010 || got.CommittedEnd != 2000 {
		t.Fatalf("recovery recorded as %+v", got)
	}
}

func TestRecoverPartitionEndsAMove(t *testing.T) {
	s := clusterOf(5)
	s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "t", Partitions: 1, ReplicationFactor: 2}})
	p := &s.topics["t"].Partitions[0]
	orig := append([]int32(nil), p.Replicas...)
	voters := append([]uint64(nil), p.Nodes...)
	var target []int32
	for id := int32(0); len(target) < 2; id++ {
		if id != orig[0] && id != orig[1] {
			target = append(target, id)
		}
	}
	if out := s.Apply(11, &Command{Reassign: &Reassign{Topic: "t", Partition: 0, Target: target}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	s.Apply(12, &Command{JoinBroker: &Broker{ID: orig[1], RaftAddr: "r", Incarnation: "new"}})
	if out := s.Apply(13, &Command{RecoverPartition: &RecoverPartition{Shard: p.Shard, Node: voters[0], Voters: voters}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if p.Reassignment != nil || !reflect.DeepEqual(p.Replicas, orig) || p.Nodes[0] != voters[0] {
		t.Fatalf("after recovering mid-move: replicas %v nodes %v move %+v", p.Replicas, p.Nodes, p.Reassignment)
	}
}
