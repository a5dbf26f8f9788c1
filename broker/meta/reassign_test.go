package meta

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestReassignValidatesAndTracksTheMove(t *testing.T) {
	s := clusterOf(5)
	if out := s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "t", Partitions: 2, ReplicationFactor: 3,
		Configs: map[string]string{ConfigMinInsyncReplicas: "2"}}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	p := &s.topics["t"].Partitions[0]
	orig := append([]int32(nil), p.Replicas...)
	origNodes := append([]uint64(nil), p.Nodes...)
	refused := []struct {
		name string
		r    Reassign
		want error
	}{
		{"unknown topic", Reassign{Topic: "x", Partition: 0, Target: []int32{0}}, kerr.UnknownTopicOrPartition},
		{"unknown partition", Reassign{Topic: "t", Partition: 7, Target: []int32{0}}, kerr.UnknownTopicOrPartition},
		{"no replicas", Reassign{Topic: "t", Partition: 0, Target: []int32{}}, kerr.InvalidReplicaAssignment},
		{"unknown broker", Reassign{Topic: "t", Partition: 0, Target: []int32{0, 1, 9}}, kerr.InvalidReplicaAssignment},
		{"broker twice", Reassign{Topic: "t", Partition: 0, Target: []int32{0, 1, 1}}, kerr.InvalidReplicaAssignment},
		{"below min.insync.replicas", Reassign{Topic: "t", Partition: 0, Target: []int32{3}}, kerr.InvalidReplicationFactor},
		{"cancel with none running", Reassign{Topic: "t", Partition: 0, Cancel: true}, kerr.NoReassignmentInProgress},
	}
	for _, c := range refused {
		if out := s.Apply(11, &Command{Reassign: &c.r}); !errors.Is(out.Err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, out.Err, c.want)
		}
		if !reflect.DeepEqual(p.Replicas, orig) || p.Reassignment != nil {
			t.Fatalf("%s changed the partition: %v %+v", c.name, p.Replicas, p.Reassignment)
		}
	}
	var target []int32
	for id := int32(0); id < 5 && len(target) < 2; id++ {
		if !slices.Contains(orig, id) {
			target = append(target, id)
		}
	}
	target = append(target, orig[0])
	if out := s.Apply(12, &Command{Reassign: &Reassign{Topic: "t", Partition: 0, Target: target}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	r := p.Reassignment
	if r == nil || !reflect.DeepEqual(r.Target, target) || !reflect.DeepEqual(r.Original, orig) || len(r.Adding()) != 2 || len(r.Removing()) != 2 {
		t.Fatalf("move recorded as %+v, replicas %v", r, p.Replicas)
	}
	if !reflect.DeepEqual(p.Replicas[:3], target) || len(p.Replicas) != 5 || p.NodeOf(orig[0]) != origNodes[0] {
		t.Fatalf("during the move replicas are %v with nodes %v", p.Replicas, p.Nodes)
	}
	if out := s.Apply(13, &Command{Reassign: &Reassign{Topic: "t", Partition: 0, Target: orig}}); !errors.Is(out.Err, kerr.ReassignmentInProgress) {
		t.Fatalf("a second move while one runs: %v", out.Err)
	}
	if out := s.Apply(14, &Command{CompleteReassignment: &CompleteReassignment{Shard: p.Shard, Target: orig}}); out.Err == nil {
		t.Fatal("a completion naming another target was applied")
	}
	added := p.NodeOf(target[0])
	if out := s.Apply(15, &Command{CompleteReassignment: &CompleteReassignment{Shard: p.Shard, Target: target}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if !reflect.DeepEqual(p.Replicas, target) || p.Reassignment != nil || p.NodeOf(target[0]) != added || len(p.Nodes) != 3 {
		t.Fatalf("after completion: %v %v %+v", p.Replicas, p.Nodes, p.Reassignment)
	}

	// A cancelled move goes back to the original replicas and nodes.
	q := &s.topics["t"].Partitions[1]
	qOrig, qNodes := append([]int32(nil), q.Replicas...), append([]uint64(nil), q.Nodes...)
	var grow []int32
	for id := int32(0); id < 5; id++ {
		if !slices.Contains(qOrig, id) {
			grow = append(grow, id)
		}
	}
	if out := s.Apply(16, &Command{Reassign: &Reassign{Topic: "t", Partition: 1, Target: append(append([]int32(nil), qOrig...), grow...)}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if out := s.Apply(17, &Command{Reassign: &Reassign{Topic: "t", Partition: 1, Cancel: true}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if !q.Reassignment.Cancelled() {
		t.Fatalf("cancel left %+v", q.Reassignment)
	}
	s.Apply(18, &Command{CompleteReassignment: &CompleteReassignment{Shard: q.Shard, Target: qOrig}})
	if !reflect.DeepEqual(q.Replicas, qOrig) || !reflect.DeepEqual(q.Nodes, qNodes) {
		t.Fatalf("after the cancelled move: %v %v, want %v %v", q.Replicas, q.Nodes, qOrig, qNodes)
	}

	// A replica whose node left the group gets a new one, once.
	old := q.NodeOf(qOrig[1])
	s.Apply(19, &Command{RenewReplicaNode: &RenewReplicaNode{Shard: q.Shard, Broker: qOrig[1], Node: old}})
	renewed := q.NodeOf(qOrig[1])
	s.Apply(20, &Command{RenewReplicaNode: &RenewReplicaNode{Shard: q.Shard, Broker: qOrig[1], Node: old}})
	if renewed == old || q.NodeOf(qOrig[1]) != renewed || BrokerOfNode(renewed) != qOrig[1] {
		t.Fatalf("renewed node %#x (was %#x), then %#x", renewed, old, q.NodeOf(qOrig[1]))
	}
}
