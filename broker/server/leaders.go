package server

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// reportLeaders publishes this broker's partition leaderships to the
// metadata group, so that every broker answers Metadata with the leader. A
// periodic sweep repairs reports lost to a metadata election.
func (b *Broker) reportLeaders(ctx context.Context) {
	sweep := time.NewTicker(2 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case info := <-b.leaders.out:
			b.reportLeader(ctx, info.ClusterID, int32(info.Term))
			b.handBackNewPartition(info.ClusterID)
		case <-sweep.C:
			for _, shard := range b.replicas.shards() {
				if !b.isLeader(shard) {
					continue
				}
				epoch := b.leaders.term(shard)
				var stale bool
				b.meta.Read(func(s *meta.State) {
					_, p := s.PartitionOfShard(shard)
					stale = p != nil && (p.Leader != b.cfg.ID || p.LeaderEpoch < epoch || p.LeaderNode != p.NodeOf(b.cfg.ID))
				})
				if stale {
					b.reportLeader(ctx, shard, epoch)
				}
			}
		}
	}
}

func (b *Broker) reportLeader(ctx context.Context, shard uint64, epoch int32) {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rep := b.replicas.get(shard)
	if rep == nil {
		return
	}
	change := &meta.LeaderChange{Shard: shard, Leader: b.cfg.ID, Epoch: epoch, Node: rep.node}
	if _, err := b.proposeMeta(pctx, &meta.Command{Leader: change}); err != nil {
		b.log.Debug("leader report failed", "shard", shard, "error", err)
	}
}

// isLeader reports whether this broker leads the shard's Raft group now.
func (b *Broker) isLeader(shard uint64) bool {
	id, ok, err := b.nh.GetLeaderID(shard)
	return err == nil && ok && id == b.nodeIn(shard)
}

// balanceLeaders hands leadership back to a partition's preferred replica
// once it is live again and has caught up, so leaders stay spread after
// failures, as Kafka's auto.leader.rebalance does (only to a replica in the
// ISR). A transfer to a replica that cannot take it (a stalled process
// still accepts connections) would stop the partition's writes until the
// transfer times out, every round.
func (b *Broker) balanceLeaders(ctx context.Context) {
	for sleep(ctx, 5*time.Second) {
		for _, shard := range b.replicas.shards() {
			b.handBack(shard, true)
		}
	}
}

// handBack asks, as leader, for leadership to go to the partition's
// preferred replica if that is live and, when caughtUp is set, seen caught
// up by this broker's probes.
func (b *Broker) handBack(shard uint64, caughtUp bool) {
	if !b.isLeader(shard) {
		return
	}
	var preferred int32 = -1
	var node uint64
	b.meta.Read(func(s *meta.State) {
		if _, p := s.PartitionOfShard(shard); p != nil && len(p.Replicas) > 0 {
			preferred = p.Replicas[0]
			node = p.NodeOf(preferred)
		}
	})
	// Only to a voter: a replica that came back as a new incarnation is an
	// observer until it caught up (membership.go).
	if preferred >= 0 && preferred != b.cfg.ID && b.liveness.isLive(preferred) && b.members.mayVote(shard, preferred) &&
		(!caughtUp || b.progress.seenCaughtUp(time.Now(), shard, preferred, b.cfg.ReplicaLagMax)) {
		_ = b.nh.RequestLeaderTransfer(shard, node)
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
func (b *Broker) handBackNewPartition(shard uint64) {
	rep := b.replicas.get(shard)
	if rep == nil {
		return
	}
	if _, end := rep.sm.Log().Offsets(); end > 0 {
		return
	}
	b.goBackground(func(ctx context.Context) {
		for i, wait := range []time.Duration{100 * time.Millisecond, followerProbeInterval + 100*time.Millisecond, 2 * followerProbeInterval, 4 * followerProbeInterval} {
			if !sleep(ctx, wait) {
				return
			}
			b.handBack(shard, i > 0)
		}
	})
}

// expireProducers asks, as leader, for the idempotent producers idle for
// longer than --producer-id-expiration to be forgotten, as Kafka's
// producer.id.expiration.ms does, so that a partition's producer table
// does not grow with every producer that ever wrote to it while its
// records are retained. The clock is read here: the horizon is the first
// offset whose batch is younger than the expiration by its timestamp (the
// time index ListOffsets uses), but never past the log end this broker saw
// one check earlier, so that batches from the last interval are kept
// whatever timestamps their clients gave them. The state machine forgets
// the producers whose batches all end below the horizon.
func (b *Broker) expireProducers(ctx context.Context) {
	seenEnd := map[uint64]int64{}
	for sleep(ctx, b.cfg.ProducerIDExpirationCheckInterval) {
		ends := map[uint64]int64{}
		for _, shard := range b.replicas.shards() {
			rep := b.replicas.get(shard)
			if rep == nil {
				continue
			}
			l := rep.sm.Log()
			_, end := l.Offsets()
			ends[shard] = end
			prev, seen := seenEnd[shard]
			if !seen || !b.isLeader(shard) {
				continue
			}
			point, _, err := l.OffsetForTimestamp(time.Now().Add(-b.cfg.ProducerIDExpiration).UnixMilli())
			if err != nil {
				b.log.Warn("producer expiration failed", "shard", shard, "error", err)
				continue
			}
			if point = min(point, prev); point <= l.ProducerHorizon() {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = b.nh.SyncPropose(pctx, b.nh.GetNoOPSession(shard), partition.ExpireProducersCommand(point))
			cancel()
			if err != nil {
				b.log.Warn("producer expiration failed", "shard", shard, "error", err)
			}
		}
		seenEnd = ends
	}
}

// enforceRetention asks, as leader, for the segments that retention.ms or
// retention.bytes have expired to be dropped. The clock is read here, and
// the state machine only applies the resulting offset.
func (b *Broker) enforceRetention(ctx context.Context) {
	for sleep(ctx, b.cfg.RetentionCheckInterval) {
		for _, shard := range b.replicas.shards() {
			rep := b.replicas.get(shard)
			if rep == nil || !b.isLeader(shard) {
				continue
			}
			var retentionMs, retentionBytes int64 = -1, -1
			b.meta.Read(func(s *meta.State) {
				if t, _ := s.PartitionOfShard(shard); t != nil && t.HasCleanupPolicy(meta.CleanupDelete) {
					retentionMs, retentionBytes = t.Int(meta.ConfigRetentionMs), t.Int(meta.ConfigRetentionBytes)
				}
			})
			minTs := int64(0)
			if retentionMs >= 0 {
				minTs = time.Now().UnixMilli() - retentionMs
			}
			l := rep.sm.Log()
			start, _ := l.Offsets()
			if point := l.RetentionPoint(minTs, retentionBytes); point > start {
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := b.nh.SyncPropose(pctx, b.nh.GetNoOPSession(shard), partition.DeleteRecordsCommand(point))
				cancel()
				if err != nil {
					b.log.Warn("retention failed", "shard", shard, "error", err)
				}
			}
		}
	}
}
