package meta

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRaftNodeIDCarriesBrokerAndGeneration(t *testing.T) {
	for _, c := range []struct {
		broker int32
		gen    uint32
	}{{0, 0}, {2, 0}, {2, 1}, {1<<31 - 1, 1<<32 - 1}} {
		n := RaftNodeID(c.broker, c.gen)
		if n == 0 || BrokerOfNode(n) != c.broker || EpochOfNode(n) != c.gen {
			t.Errorf("RaftNodeID(%d, %d) = %#x: broker %d generation %d", c.broker, c.gen, n, BrokerOfNode(n), EpochOfNode(n))
		}
	}
	if RaftNodeID(4, 0) != 5 {
		t.Error("generation 0 changed the node ids of brokers from before generations")
	}
}

func TestRegistrationAndJoinAssignGenerations(t *testing.T) {
	s := NewState()
	apply := func(index uint64, c Command) Outcome { return s.Apply(index, &c) }
	reg := func(id int32, inc string, gen uint32) Command {
		return Command{RegisterBroker: &Broker{ID: id, RaftAddr: "r", Incarnation: inc, Generation: gen}}
	}
	join := func(id int32, inc string) Command {
		return Command{JoinBroker: &Broker{ID: id, RaftAddr: "r", Incarnation: inc}}
	}
	steps := []struct {
		name    string
		cmd     Command
		wantErr error
		wantGen uint32
	}{
		{"founder registers generation 0", reg(0, "a0", 0), nil, 0},
		{"founder registers again, new address", reg(0, "a0", 0), nil, 0},
		{"unknown broker cannot claim a later generation", reg(1, "b9", 3), kerr.StaleBrokerEpoch, 0},
		{"a first start that joins is generation 1", join(1, "b1"), nil, 1},
		{"a retried join keeps its generation", join(1, "b1"), nil, 1},
		{"the joined incarnation registers", reg(1, "b1", 1), nil, 1},
		{"an empty disk of broker 0 joins as generation 1", join(0, "a1"), nil, 1},
		{"the replaced incarnation is refused", reg(0, "a0", 0), kerr.StaleBrokerEpoch, 0},
		{"another incarnation claiming the current generation is refused", reg(0, "zz", 1), kerr.StaleBrokerEpoch, 0},
		{"a second lost disk is generation 2", join(0, "a2"), nil, 2},
	}
	for i, st := range steps {
		out := apply(uint64(i+1), st.cmd)
		if !errors.Is(out.Err, st.wantErr) && out.Err != st.wantErr {
			t.Fatalf("%s: error %v, want %v", st.name, out.Err, st.wantErr)
		}
		if st.wantErr == nil && (out.Broker == nil || out.Broker.Generation != st.wantGen) {
			t.Fatalf("%s: recorded %+v, want generation %d", st.name, out.Broker, st.wantGen)
		}
	}
	if s.clusterID == "" {
		t.Fatal("no cluster id after the first registration")
	}
	first := s.clusterID
	apply(100, join(3, "d1"))
	if s.clusterID != first {
		t.Fatal("the cluster id changed after it was given")
	}
}

func TestLegacyRegistrationAdoptsAnIncarnation(t *testing.T) {
	s := NewState()
	s.Apply(1, &Command{RegisterBroker: &Broker{ID: 0, RaftAddr: "r"}}) // written by a broker before incarnations
	if out := s.Apply(2, &Command{RegisterBroker: &Broker{ID: 0, RaftAddr: "r", Incarnation: "x"}}); out.Err != nil {
		t.Fatalf("the upgraded broker's registration: %v", out.Err)
	}
	if out := s.Apply(3, &Command{RegisterBroker: &Broker{ID: 0, RaftAddr: "r", Incarnation: "y"}}); !errors.Is(out.Err, kerr.StaleBrokerEpoch) {
		t.Fatalf("another incarnation after the adoption: %v, want STALE_BROKER_EPOCH", out.Err)
	}
}

func TestNewIncarnationsGetNewNodesInEveryPartition(t *testing.T) {
	s := clusterOf(3)
	if out := s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "t", Partitions: 3, ReplicationFactor: 2}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if out := s.Apply(11, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "u", Partitions: 1, ReplicationFactor: 3}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	seen := map[uint64]bool{}
	before := map[uint64][]uint64{}
	for _, name := range []string{"t", "u"} {
		for _, p := range s.topics[name].Partitions {
			for i, id := range p.Replicas {
				n := p.NodeOf(id)
				if BrokerOfNode(n) != id || p.Founders[i] != n || seen[n] && name == "u" {
					t.Fatalf("%s-%d: replica %d has node %#x, founders %v", name, p.Index, id, n, p.Founders)
				}
			}
			before[p.Shard] = append([]uint64(nil), p.Nodes...)
		}
	}
	s.Apply(12, &Command{JoinBroker: &Broker{ID: 1, RaftAddr: "r", Incarnation: "new"}})
	s.Apply(13, &Command{JoinBroker: &Broker{ID: 1, RaftAddr: "r", Incarnation: "new"}}) // retried
	var renewed uint64
	for _, name := range []string{"t", "u"} {
		for _, p := range s.topics[name].Partitions {
			for i, id := range p.Replicas {
				n, old := p.Nodes[i], before[p.Shard][i]
				switch {
				case id != 1 && n != old:
					t.Fatalf("%s-%d: broker %d's node changed", name, p.Index, id)
				case id == 1 && (n == old || BrokerOfNode(n) != 1 || EpochOfNode(n) <= EpochOfNode(old)):
					t.Fatalf("%s-%d: broker 1's node %#x after its new incarnation, was %#x", name, p.Index, n, old)
				case id == 1 && renewed != 0 && n != renewed:
					t.Fatalf("a retried join renewed the nodes again: %#x and %#x", n, renewed)
				case id == 1:
					renewed = n
				}
			}
			if p.Founders[0] != before[p.Shard][0] && p.Replicas[0] != 1 {
				t.Fatalf("founders changed: %v", p.Founders)
			}
		}
	}
	legacy := Partition{Replicas: []int32{2, 0}}
	if got := legacy.FounderNodes(); got[0] != RaftNodeID(2, 0) || got[1] != RaftNodeID(0, 0) || legacy.NodeOf(0) != RaftNodeID(0, 0) {
		t.Fatalf("a partition from before nodes has founders %v", got)
	}
}

func TestUnregisterBrokerOnceItHoldsNothing(t *testing.T) {
	s := clusterOf(3)
	s.Apply(4, &Command{JoinBroker: &Broker{ID: 3, RaftAddr: "r", Incarnation: "first"}})
	if out := s.Apply(5, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "t", Assignment: [][]int32{{3, 0, 1}}}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if out := s.Apply(6, &Command{UnregisterBroker: &UnregisterBroker{ID: 3}}); !errors.Is(out.Err, kerr.InvalidRequest) {
		t.Fatalf("unregistering a broker that holds a replica: %v", out.Err)
	}
	if out := s.Apply(7, &Command{UnregisterBroker: &UnregisterBroker{ID: 9}}); !errors.Is(out.Err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregistering an unknown broker: %v", out.Err)
	}
	s.Apply(8, &Command{Reassign: &Reassign{Topic: "t", Partition: 0, Target: []int32{0, 1, 2}}})
	s.Apply(9, &Command{CompleteReassignment: &CompleteReassignment{Shard: s.topics["t"].Partitions[0].Shard, Target: []int32{0, 1, 2}}})
	if out := s.Apply(10, &Command{UnregisterBroker: &UnregisterBroker{ID: 3}}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if _, ok := s.brokers[3]; ok {
		t.Fatal("broker 3 still registered")
	}
	placed, err := s.placeReplicas(s.topics["t"], 6, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range placed {
		if slices.Contains(p, 3) {
			t.Fatalf("a new partition placed on unregistered broker 3: %v", p)
		}
	}
	// The id given to a broker again never reuses its metadata node.
	out := s.Apply(11, &Command{JoinBroker: &Broker{ID: 3, RaftAddr: "r", Incarnation: "second"}})
	if out.Err != nil || out.Broker.Generation != 2 {
		t.Fatalf("rejoined as %+v (%v), want generation 2", out.Broker, out.Err)
	}
}
