package meta

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RaftNodeID is a Raft node id: an epoch in the high 32 bits and the
// broker id plus one (Raft node ids are not zero) in the low. Node ids
// are never reused within a Raft group (Dragonboat refuses a removed
// one), so each new placement of a replica takes a new epoch: the broker's
// generation for its metadata-group node, State.NextNodeEpoch for a
// partition replica. Epoch 0 keeps the ids of brokers and partitions from
// before epochs.
func RaftNodeID(broker int32, epoch uint32) uint64 {
	return uint64(epoch)<<32 | (uint64(broker) + 1)
}

// BrokerOfNode is the broker a Raft node id belongs to.
func BrokerOfNode(node uint64) int32 { return int32(uint32(node)) - 1 }

// EpochOfNode is the epoch of a Raft node id.
func EpochOfNode(node uint64) uint32 { return uint32(node >> 32) }

// Partition is one partition's placement. Replicas[0] is the preferred
// leader.
type Partition struct {
	Index       int32
	Shard       uint64
	Replicas    []int32
	Leader      int32
	LeaderEpoch int32
	// LeaderNode is the Raft node that reported itself leader: once its
	// broker's replica is another node (the broker came back on an empty
	// disk), the recorded leader holds nothing and is named by no one.
	LeaderNode uint64 `json:",omitempty"`
	// Nodes are the Raft nodes of Replicas, in their order; nil for a
	// partition from before nodes were recorded, whose replicas are their
	// brokers' nodes at epoch 0.
	Nodes []uint64 `json:",omitempty"`
	// Founders are the nodes the partition's group was created with; nil
	// for a partition from before, whose founders are its replicas at
	// epoch 0. A replica that is not a founder joins the group by a
	// membership change.
	Founders []uint64 `json:",omitempty"`
	// Reassignment is the move of its replicas under way, if any.
	Reassignment *Reassignment `json:",omitempty"`
	// Recovery is the partition's latest forced recovery (recovery.go).
	Recovery *Recovery `json:",omitempty"`
	// Growth is the sequence number of the ordered growth that created
	// the partition, 0 for one the topic was created with or grew by
	// without order: a group that consumes the topic starts such a
	// partition at its log start (growth.go).
	Growth int `json:",omitempty"`
}

// NodeOf returns the Raft node of broker's replica, or 0 if broker holds
// none.
func (p *Partition) NodeOf(broker int32) uint64 {
	for i, id := range p.Replicas {
		if id == broker {
			if p.Nodes == nil {
				return RaftNodeID(id, 0)
			}
			return p.Nodes[i]
		}
	}
	return 0
}

// FounderNodes are the Raft nodes the partition's group was created with.
func (p *Partition) FounderNodes() []uint64 {
	if p.Founders != nil {
		return p.Founders
	}
	out := make([]uint64, len(p.Replicas))
	for i, id := range p.Replicas {
		out[i] = RaftNodeID(id, 0)
	}
	return out
}

// materializeNodes records the nodes of a partition from before nodes
// were recorded, before one of them changes.
func (p *Partition) materializeNodes() {
	if p.Nodes != nil {
		return
	}
	p.Founders = p.FounderNodes()
	p.Nodes = make([]uint64, len(p.Replicas))
	for i, id := range p.Replicas {
		p.Nodes[i] = RaftNodeID(id, 0)
	}
}

func (s *State) takeNodeEpoch() uint32 {
	if s.nextNodeEpoch == 0 {
		s.nextNodeEpoch = 1
	}
	e := s.nextNodeEpoch
	s.nextNodeEpoch++
	return e
}

// renewNodes gives every partition replica of broker a new node, for a
// new incarnation of it: its old nodes hold nothing any more.
func (s *State) renewNodes(broker int32) {
	epoch := uint32(0)
	for _, t := range s.topics {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			for r, id := range p.Replicas {
				if id != broker {
					continue
				}
				if epoch == 0 {
					epoch = s.takeNodeEpoch()
				}
				p.materializeNodes()
				p.Nodes[r] = RaftNodeID(broker, epoch)
			}
		}
	}
}

// Reassignment is a move of a partition's replicas under way (Kafka's
// AlterPartitionReassignments). While it runs, Replicas holds Target's
// brokers first, then those of Original that Target drops, with their
// nodes; the partition's leader makes Target's nodes the group's voters
// (new ones join as observers and are promoted once caught up, and only
// then do the dropped ones leave) and completes it, which leaves Replicas
// at Target. A cancelled move has Target back at Original.
type Reassignment struct {
	Original []int32
	Target   []int32
}

// Adding are the brokers Target adds.
func (r *Reassignment) Adding() []int32 { return without(r.Target, r.Original) }

// Removing are the brokers Target drops.
func (r *Reassignment) Removing() []int32 { return without(r.Original, r.Target) }

// Cancelled reports whether the move is going back to its original
// replicas.
func (r *Reassignment) Cancelled() bool { return sameIDs(r.Original, r.Target) }

// Reassign starts, or cancels, a partition's move.
type Reassign struct {
	Topic     string
	Partition int32
	Target    []int32 `json:",omitempty"`
	Cancel    bool    `json:",omitempty"`
	// Capacity refuses a target broker without room for another replica
	// (Broker.MaxReplicas); false in commands from before.
	Capacity bool `json:",omitempty"`
}

// CompleteReassignment ends a partition's move: proposed by its leader
// once the group's voters are Target's nodes.
type CompleteReassignment struct {
	Shard  uint64
	Target []int32
}

// RenewReplicaNode gives a partition replica a new node: proposed by the
// leader when the node the replica has was removed from the group (a move
// cancelled after its original replica left), since a removed node never
// joins again.
type RenewReplicaNode struct {
	Shard  uint64
	Broker int32
	Node   uint64 // the node being replaced; ignored if no longer current
}

// TargetReplicas are the replicas the partition is to have: the move's
// target while one runs, else its replicas.
func (p *Partition) TargetReplicas() []int32 {
	if p.Reassignment != nil {
		return p.Reassignment.Target
	}
	return p.Replicas
}

func (s *State) reassign(r *Reassign) Outcome {
	t := s.topics[r.Topic]
	if t == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	p := &t.Partitions[r.Partition]
	if r.Cancel {
		if p.Reassignment == nil || p.Reassignment.Cancelled() {
			return Outcome{Err: kerr.NoReassignmentInProgress}
		}
		p.Reassignment.Target = append([]int32(nil), p.Reassignment.Original...)
		p.reorder(p.Reassignment.Target)
		return Outcome{Topic: t}
	}
	if p.Reassignment != nil {
		return Outcome{Err: kerr.ReassignmentInProgress}
	}
	if err := s.validateAssignment(r.Target); err != nil {
		return Outcome{Err: err}
	}
	if n := t.Int(ConfigMinInsyncReplicas); int64(len(r.Target)) < n {
		return Outcome{Err: kerr.InvalidReplicationFactor}
	}
	if r.Capacity && !s.hasRoom(s.ReplicaCounts(), without(r.Target, p.Replicas)) {
		return Outcome{Err: kerr.PolicyViolation}
	}
	p.materializeNodes()
	if sameIDs(p.Replicas, r.Target) {
		p.reorder(r.Target) // a new preferred leader, nothing to move
		return Outcome{Topic: t}
	}
	original := append([]int32(nil), p.Replicas...)
	epoch := uint32(0)
	for _, id := range r.Target {
		if p.NodeOf(id) == 0 {
			if epoch == 0 {
				epoch = s.takeNodeEpoch()
			}
			p.Replicas = append(p.Replicas, id)
			p.Nodes = append(p.Nodes, RaftNodeID(id, epoch))
		}
	}
	p.Reassignment = &Reassignment{Original: original, Target: append([]int32(nil), r.Target...)}
	p.reorder(r.Target)
	return Outcome{Topic: t}
}

// validateAssignment refuses an empty replica list, a broker named twice
// and a broker the cluster does not know.
func (s *State) validateAssignment(replicas []int32) error {
	if len(replicas) == 0 {
		return kerr.InvalidReplicaAssignment
	}
	seen := map[int32]bool{}
	for _, id := range replicas {
		if _, ok := s.brokers[id]; !ok || seen[id] {
			return kerr.InvalidReplicaAssignment
		}
		seen[id] = true
	}
	return nil
}

func (s *State) completeReassignment(c *CompleteReassignment) Outcome {
	t, p := s.PartitionOfShard(c.Shard)
	if p == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	if p.Reassignment == nil || !slices.Equal(p.Reassignment.Target, c.Target) {
		return Outcome{Err: kerr.InvalidRequest} // a stale completion
	}
	nodes := make([]uint64, len(c.Target))
	for i, id := range c.Target {
		nodes[i] = p.NodeOf(id)
	}
	p.Replicas, p.Nodes, p.Reassignment = append([]int32(nil), c.Target...), nodes, nil
	rf := len(t.Partitions[0].Replicas)
	for _, q := range t.Partitions {
		if len(q.Replicas) != rf {
			rf = int(t.ReplicationFactor)
			break
		}
	}
	t.ReplicationFactor = int16(rf)
	return Outcome{Topic: t}
}

func (s *State) renewReplicaNode(c *RenewReplicaNode) Outcome {
	_, p := s.PartitionOfShard(c.Shard)
	if p == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	if p.NodeOf(c.Broker) != c.Node {
		return Outcome{} // renewed already
	}
	p.materializeNodes()
	epoch := s.takeNodeEpoch()
	for i, id := range p.Replicas {
		if id == c.Broker {
			p.Nodes[i] = RaftNodeID(id, epoch)
		}
	}
	return Outcome{}
}

// reorder puts first's brokers at the front of Replicas, in first's
// order, keeping each broker's node.
func (p *Partition) reorder(first []int32) {
	node := map[int32]uint64{}
	for i, id := range p.Replicas {
		node[id] = p.Nodes[i]
	}
	order := append(append([]int32(nil), first...), without(p.Replicas, first)...)
	p.Replicas = p.Replicas[:0]
	p.Nodes = p.Nodes[:0]
	for _, id := range order {
		if n, ok := node[id]; ok {
			p.Replicas = append(p.Replicas, id)
			p.Nodes = append(p.Nodes, n)
		}
	}
}

// without returns the ids of a that b lacks, in a's order.
func without(a, b []int32) []int32 {
	var out []int32
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

func sameIDs(a, b []int32) bool {
	return len(a) == len(b) && len(without(a, b)) == 0 && len(without(b, a)) == 0
}

// validateAssignments checks a manual placement of partitions: each as
// validateAssignment asks, all with the same number of replicas (rf, if
// not -1).
func (s *State) validateAssignments(assignment [][]int32, rf int) error {
	if len(assignment) == 0 {
		return kerr.InvalidReplicaAssignment
	}
	if rf < 0 {
		rf = len(assignment[0])
	}
	for _, replicas := range assignment {
		if len(replicas) != rf {
			return kerr.InvalidReplicaAssignment
		}
		if err := s.validateAssignment(replicas); err != nil {
			return err
		}
	}
	return nil
}

// placeReplicas places n new partitions of t with rf replicas each: the
// preferred leader on the broker that is preferred leader of the fewest
// partitions, the other replicas on the brokers holding the fewest
// replicas, each on a rack the partition does not use yet where brokers
// carry racks, as Kafka's rack-aware placement does. Ties go round the
// brokers from a point the topic's id picks, so topics spread their
// leaders. The result depends only on the state: replicas agree on it.
func (s *State) placeReplicas(t *Topic, n, rf int, capacity bool) ([][]int32, error) {
	brokers := s.BrokerIDs()
	// counts is what each broker holds, for its replica limit. load is
	// the placement's cost, and differs: it counts a growing topic's
	// partitions twice (from s.topics and from t). Placement must stay
	// what it was when committed commands are replayed, so the cost
	// keeps that form.
	counts := s.ReplicaCounts()
	load, leads := map[int32]int{}, map[int32]int{}
	for _, other := range s.topics {
		for _, p := range other.Partitions {
			for i, id := range p.Replicas {
				load[id]++
				if i == 0 {
					leads[id]++
				}
			}
		}
	}
	for _, p := range t.Partitions {
		for i, id := range p.Replicas {
			load[id]++
			if i == 0 {
				leads[id]++
			}
		}
	}
	seed := int(binary.BigEndian.Uint32(t.ID[:4]) % uint32(len(brokers)))
	out := make([][]int32, 0, n)
	for k := 0; k < n; k++ {
		start := (seed + len(t.Partitions) + k) % len(brokers)
		// Brokers in the order ties go: from start, round the ring.
		ring := append(append([]int32(nil), brokers[start:]...), brokers[:start]...)
		if capacity {
			ring = slices.DeleteFunc(ring, func(id int32) bool { return !s.hasRoom(counts, []int32{id}) })
			if len(ring) < rf {
				return nil, kerr.PolicyViolation
			}
		}
		replicas := []int32{pickBroker(ring, nil, func(id int32) [2]int { return [2]int{leads[id], load[id]} }, nil)}
		racks := map[string]bool{s.brokers[replicas[0]].Rack: true}
		for len(replicas) < rf {
			rackUsed := func(id int32) bool { r := s.brokers[id].Rack; return r != "" && racks[r] }
			next := pickBroker(ring, replicas, func(id int32) [2]int { return [2]int{load[id], 0} }, rackUsed)
			replicas = append(replicas, next)
			racks[s.brokers[next].Rack] = true
		}
		for i, id := range replicas {
			load[id]++
			counts[id]++
			if i == 0 {
				leads[id]++
			}
		}
		out = append(out, replicas)
	}
	return out, nil
}

// ReplicaCounts is how many partition replicas each broker holds, those
// a move is adding included.
func (s *State) ReplicaCounts() map[int32]int {
	out := map[int32]int{}
	for _, t := range s.topics {
		for _, p := range t.Partitions {
			for _, id := range p.Replicas {
				out[id]++
			}
		}
	}
	return out
}

// hasRoom reports whether each of ids has room for one more replica
// beside the counts it holds (Broker.MaxReplicas).
func (s *State) hasRoom(counts map[int32]int, ids []int32) bool {
	for _, id := range ids {
		if m := s.brokers[id].MaxReplicas; m > 0 && counts[id] >= int(m) {
			return false
		}
	}
	return true
}

// fitAssignment refuses a placement of new partitions that would take a
// broker past its replica limit.
func (s *State) fitAssignment(assignment [][]int32) error {
	counts := s.ReplicaCounts()
	for _, replicas := range assignment {
		if !s.hasRoom(counts, replicas) {
			return kerr.PolicyViolation
		}
		for _, id := range replicas {
			counts[id]++
		}
	}
	return nil
}

// pickBroker picks from ring, leaving out taken, the broker with the
// least cost, preferring one avoid does not name; ties go to the earlier
// in ring.
func pickBroker(ring, taken []int32, cost func(int32) [2]int, avoid func(int32) bool) int32 {
	best, bestKey := int32(-1), [3]int{}
	for _, id := range ring {
		if slices.Contains(taken, id) {
			continue
		}
		c := cost(id)
		key := [3]int{0, c[0], c[1]}
		if avoid != nil && avoid(id) {
			key[0] = 1
		}
		if best < 0 || key[0] < bestKey[0] || key[0] == bestKey[0] && (key[1] < bestKey[1] || key[1] == bestKey[1] && key[2] < bestKey[2]) {
			best, bestKey = id, key
		}
	}
	return best
}
