package replica

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
)

// isLeader reports whether this broker leads the shard's Raft group now.
func (b *Manager) isLeader(shard uint64) bool {
	id, ok, err := b.nh.GetLeaderID(shard)
	return err == nil && ok && id == b.nodeIn(shard)
}

// leadership is what this broker does about the partitions it leads:
// it reports its leaderships to the metadata group and hands them back to
// preferred replicas.
type leadership struct{ b *Manager }

// reportLeaders publishes this broker's partition leaderships to the
// metadata group, so that every broker answers Metadata with the leader. A
// periodic sweep repairs reports lost to a metadata election.
func (l leadership) reportLeaders(ctx context.Context) {
	sweep := time.NewTicker(2 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case info := <-l.b.leaders.out:
			l.reportLeader(ctx, info.ClusterID, int32(info.Term))
			l.handBackNewPartition(info.ClusterID)
		case <-sweep.C:
			for _, shard := range l.b.replicas.shards() {
				if !l.b.isLeader(shard) {
					continue
				}
				epoch := l.b.leaders.term(shard)
				var stale bool
				l.b.Meta.Read(func(s *meta.State) {
					_, p := s.PartitionOfShard(shard)
					stale = p != nil && (p.Leader != l.b.cfg.ID || p.LeaderEpoch < epoch || p.LeaderNode != p.NodeOf(l.b.cfg.ID))
				})
				if stale {
					l.reportLeader(ctx, shard, epoch)
				}
			}
		}
	}
}
func (l leadership) reportLeader(ctx context.Context, shard uint64, epoch int32) {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rep := l.b.replicas.get(shard)
	if rep == nil {
		return
	}
	change := &meta.LeaderChange{Shard: shard, Leader: l.b.cfg.ID, Epoch: epoch, Node: rep.node}
	if _, err := l.b.Propose(pctx, &meta.Command{Leader: change}); err != nil {
		l.b.Log.Debug("leader report failed", "shard", shard, "error", err)
	}
}

// balanceLeaders hands leadership back to a partition's preferred replica
// once it is live again and has caught up, so leaders stay spread after
// failures, as Kafka's auto.leader.rebalance does (only to a replica in the
// ISR). A transfer to a replica that cannot take it (a stalled process
// still accepts connections) would stop the partition's writes until the
// transfer times out, every round.
func (l leadership) balanceLeaders(ctx context.Context) {
	for wait.Sleep(ctx, 5*time.Second) {
		for _, shard := range l.b.replicas.shards() {
			l.handBack(shard, true)
		}
	}
}

// handBack asks, as leader, for leadership to go to the partition's
// preferred replica if that is live and, when caughtUp is set, seen caught
// up by this broker's probes. Without caughtUp (a new partition) a replica
// the periodic probes have not seen yet is probed now.
func (l leadership) handBack(shard uint64, caughtUp bool) {
	if !l.b.isLeader(shard) {
		return
	}
	var preferred int32 = -1
	var node uint64
	var broker meta.Broker
	l.b.Meta.Read(func(s *meta.State) {
		if _, p := s.PartitionOfShard(shard); p != nil && len(p.Replicas) > 0 {
			preferred = p.Replicas[0]
			node = p.NodeOf(preferred)
			broker, _ = s.Broker(preferred)
		}
	})
	if !caughtUp {
		l.b.Liveness.Confirm([]meta.Broker{broker})
	}
	// Only to a voter: a replica that came back as a new incarnation is an
	// observer until it caught up (membership.go).
	if preferred >= 0 && preferred != l.b.cfg.ID && l.b.Liveness.IsLive(preferred) && l.b.members.mayVote(shard, preferred) &&
		(!caughtUp || l.b.progress.seenCaughtUp(time.Now(), shard, preferred, l.b.cfg.ReplicaLagMax)) {
		_ = l.b.nh.RequestLeaderTransfer(shard, node)
	}
}

// handBackNewPartition hands a partition that has no records yet to its
// preferred replica right away, not at the next balancing round: Kafka's
// controller makes the preferred replica the first leader, and CreateTopics
// answers once it leads (awaitLeaders), so that clients do not see
// leadership move just after they start using a topic. The first try asks
// only that the replica be live: with no records there is nothing to catch
// up on but a few Raft entries, which a leader transfer brings over before
// it hands off (or it gives up within an election timeout); later tries
// wait for this broker's probes to have seen the replica.
func (l leadership) handBackNewPartition(shard uint64) {
	rep := l.b.replicas.get(shard)
	if rep == nil {
		return
	}
	if _, end := rep.sm.Log().Offsets(); end > 0 {
		return
	}
	l.b.goBackground(func(ctx context.Context) {
		for i, pause := range []time.Duration{100 * time.Millisecond, followerProbeInterval + 100*time.Millisecond, 2 * followerProbeInterval, 4 * followerProbeInterval} {
			if !wait.Sleep(ctx, pause) {
				return
			}
			l.handBack(shard, i > 0)
		}
	})
}
