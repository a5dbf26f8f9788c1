package replica

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// retention is what a partition's leader decides by the clock and
// proposes, so that every replica applies the same: records that
// retention.ms and retention.bytes expired, and idempotent producers idle
// for longer than --producer-id-expiration.
type retention struct{ b *Manager }

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
func (r retention) expireProducers(ctx context.Context) {
	seenEnd := map[uint64]int64{}
	for wait.Sleep(ctx, r.b.cfg.ProducerIDExpirationCheckInterval) {
		ends := map[uint64]int64{}
		for _, shard := range r.b.replicas.shards() {
			rep := r.b.replicas.get(shard)
			if rep == nil {
				continue
			}
			l := rep.sm.Log()
			_, end := l.Offsets()
			ends[shard] = end
			prev, seen := seenEnd[shard]
			if !seen || !r.b.isLeader(shard) {
				continue
			}
			point, _, err := l.OffsetForTimestamp(time.Now().Add(-r.b.cfg.ProducerIDExpiration).UnixMilli())
			if err != nil {
				r.b.Log.Warn("producer expiration failed", "shard", shard, "error", err)
				continue
			}
			if point = min(point, prev); point <= l.ProducerHorizon() {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = r.b.nh.SyncPropose(pctx, r.b.nh.GetNoOPSession(shard), partition.ExpireProducersCommand(point))
			cancel()
			if err != nil {
				r.b.Log.Warn("producer expiration failed", "shard", shard, "error", err)
			}
		}
		seenEnd = ends
	}
}

// enforceRetention asks, as leader, for the segments that retention.ms or
// retention.bytes have expired to be dropped. The clock is read here, and
// the state machine only applies the resulting offset.
func (r retention) enforceRetention(ctx context.Context) {
	for wait.Sleep(ctx, r.b.cfg.RetentionCheckInterval) {
		for _, shard := range r.b.replicas.shards() {
			rep := r.b.replicas.get(shard)
			if rep == nil || !r.b.isLeader(shard) {
				continue
			}
			var retentionMs, retentionBytes int64 = -1, -1
			r.b.Meta.Read(func(s *meta.State) {
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
				_, err := r.b.nh.SyncPropose(pctx, r.b.nh.GetNoOPSession(shard), partition.DeleteRecordsCommand(point))
				cancel()
				if err != nil {
					r.b.Log.Warn("retention failed", "shard", shard, "error", err)
				}
			}
		}
	}
}
