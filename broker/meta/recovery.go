package meta

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A forced recovery brings back a partition whose Raft group lost a quorum
// of its voters' data (their brokers came back on empty disks), which Raft
// alone never does: a person asks for it (ElectLeaders with the unclean
// election type), knowing that whatever only the lost replicas held is
// gone. The group restarts from one surviving voter, the one whose Raft
// log is the most up to date, as its only voter; every other replica gets
// a new node, which joins it as an observer, catches up and is promoted,
// as after any lost disk.

// RecoverPartition starts a forced recovery of a partition's group from
// one surviving voter's node.
type RecoverPartition struct {
	Shard uint64
	// Node is the surviving voter the group restarts from.
	Node uint64
	// Voters are the group's voters as the surviving replicas know them:
	// the recovery is refused while a quorum of them are still the
	// partition's nodes (replicas that kept their data, whose brokers may
	// only be down).
	Voters []uint64
	// CommittedEnd is the log end offset of Node's replica when asked: the
	// records it knew to be committed.
	CommittedEnd int64
	// AtMillis is when it was asked, by the proposer's clock.
	AtMillis int64
}

// CompleteRecovery is proposed by the recovered replica's broker once
// its node leads the group alone and applied all it kept.
type CompleteRecovery struct {
	Shard uint64
	Node  uint64
	// RecoveredEnd is the partition's log end offset then: the records
	// from CommittedEnd up to it were in the surviving replica's Raft log
	// without being known to be committed, and were kept.
	RecoveredEnd int64
}

// Recovery is a partition's latest forced recovery.
type Recovery struct {
	Node         uint64
	CommittedEnd int64
	AtMillis     int64
	// Done: the group runs again from Node; RecoveredEnd is then set.
	Done         bool  `json:",omitempty"`
	RecoveredEnd int64 `json:",omitempty"`
}

// IntactVoters are the voters among nodes that are still the partition's
// nodes: their replicas kept their data, though their brokers may be down.
func (p *Partition) IntactVoters(voters []uint64) []uint64 {
	var out []uint64
	current := p.Nodes
	if current == nil {
		current = p.FounderNodes()
	}
	for _, n := range voters {
		if slices.Contains(current, n) {
			out = append(out, n)
		}
	}
	return out
}

// HasIntactQuorum reports whether a quorum of a group's voters kept their
// data: the group elects a leader once their brokers are up, and a forced
// recovery would throw away records a quorum acknowledged.
func (p *Partition) HasIntactQuorum(voters []uint64) bool {
	return len(p.IntactVoters(voters))*2 > len(voters)
}

func (s *State) recoverPartition(c *RecoverPartition) Outcome {
	t, p := s.PartitionOfShard(c.Shard)
	if p == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	if p.Recovery != nil && !p.Recovery.Done {
		if p.Recovery.Node == c.Node {
			return Outcome{Topic: t} // a retry
		}
		return Outcome{Err: kerr.InvalidRequest}
	}
	if len(c.Voters) == 0 || !slices.Contains(c.Voters, c.Node) || !slices.Contains(p.IntactVoters(c.Voters), c.Node) {
		return Outcome{Err: kerr.EligibleLeadersNotAvailable}
	}
	if p.HasIntactQuorum(c.Voters) {
		return Outcome{Err: kerr.InvalidRequest}
	}
	p.materializeNodes()
	if r := p.Reassignment; r != nil {
		// A move cannot go on without a quorum: the recovered group
		// keeps the side of it the surviving replica is on.
		keep := r.Original
		if slices.Contains(r.Target, BrokerOfNode(c.Node)) {
			keep = r.Target
		}
		p.Reassignment = nil
		p.reorder(keep)
		p.Replicas, p.Nodes = p.Replicas[:len(keep)], p.Nodes[:len(keep)]
	}
	epoch := s.takeNodeEpoch()
	for i, id := range p.Replicas {
		if p.Nodes[i] != c.Node {
			p.Nodes[i] = RaftNodeID(id, epoch)
		}
	}
	p.Recovery = &Recovery{Node: c.Node, CommittedEnd: c.CommittedEnd, AtMillis: c.AtMillis}
	return Outcome{Topic: t}
}

func (s *State) completeRecovery(c *CompleteRecovery) Outcome {
	t, p := s.PartitionOfShard(c.Shard)
	if p == nil {
		return Outcome{Err: kerr.UnknownTopicOrPartition}
	}
	if p.Recovery == nil || p.Recovery.Node != c.Node {
		return Outcome{Err: kerr.InvalidRequest}
	}
	if !p.Recovery.Done {
		p.Recovery.Done, p.Recovery.RecoveredEnd = true, c.RecoveredEnd
	}
	return Outcome{Topic: t}
}
