package replica

import (
	"time"

	"github.com/raftka/raftka/broker/meta"
)

// A broker that is asked to stop (SIGTERM, a rolling restart) first hands
// the leadership of every Raft group it leads, the metadata group's
// included, to a voter that is live and, for a partition, seen caught up,
// as Kafka's controlled shutdown moves leaders off a broker before it
// stops: producers then wait for a leader transfer, a few round trips,
// instead of an election timeout. It tries for --controlled-shutdown-
// timeout at most, then stops whatever it still leads.

// handOffLeadership moves away the leadership of the groups this broker
// leads, until it leads none or bound passes.
func (b *Manager) handOffLeadership(bound time.Duration) {
	if bound <= 0 {
		return
	}
	deadline := time.Now().Add(bound)
	asked := map[uint64]bool{}
	for {
		led := b.ledGroups()
		if len(led) == 0 {
			b.Log.Info("leadership handed off before stopping", "groups", len(asked))
			return
		}
		if time.Now().After(deadline) {
			b.Log.Warn("stopping while still leading", "groups", len(led))
			return
		}
		targets := 0
		for _, shard := range led {
			if target := b.handOffTarget(shard); target != 0 {
				_ = b.nh.RequestLeaderTransfer(shard, target)
				asked[shard] = true
				targets++
			}
		}
		if targets == 0 {
			b.Log.Warn("stopping while still leading: no other voter is live", "groups", len(led))
			return
		}
		time.Sleep(4 * b.cfg.RTT)
	}
}

// ledGroups are the Raft groups this broker leads now.
func (b *Manager) ledGroups() []uint64 {
	var out []uint64
	if id, ok := b.MetaLeader(); ok && id == b.cfg.ID {
		out = append(out, meta.MetadataShard)
	}
	for _, shard := range b.replicas.shards() {
		if b.isLeader(shard) {
			out = append(out, shard)
		}
	}
	return out
}

// handOffTarget picks the node to hand a group's leadership to: a live
// voter, for a partition preferably one whose replica the probes saw
// caught up, else any live voter (a leader that took over moments ago has
// not seen its followers yet; Raft hands over once the target has the
// log); 0 if there is none.
func (b *Manager) handOffTarget(shard uint64) uint64 {
	now := time.Now()
	var target uint64
	b.Meta.Read(func(s *meta.State) {
		if shard == meta.MetadataShard {
			for _, id := range s.BrokerIDs() {
				if s.VotesInMetadata(id, b.cfg.MetadataVoters) && id != b.cfg.ID && b.Liveness.IsLive(id) {
					br, _ := s.Broker(id)
					target = br.Node()
					return
				}
			}
			return
		}
		_, p := s.PartitionOfShard(shard)
		if p == nil {
			return
		}
		for _, caughtUpOnly := range []bool{true, false} {
			for _, id := range p.Replicas {
				if id != b.cfg.ID && b.Liveness.IsLive(id) && b.members.mayVote(shard, id) &&
					(!caughtUpOnly || b.progress.seenCaughtUp(now, shard, id, b.cfg.ReplicaLagMax)) {
					target = p.NodeOf(id)
					return
				}
			}
		}
	})
	return target
}
