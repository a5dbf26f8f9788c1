package replica

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// cleanLogs runs compaction passes on this broker's replicas of compacted
// topics (cleanup.policy=compact). Every replica cleans its own log, as in
// Kafka: compaction changes no offset and no batch header, so it needs no
// agreement (see broker/partition/compact.go). The clock is read here.
func (b *Manager) cleanLogs(ctx context.Context) {
	for wait.Sleep(ctx, b.cfg.LogCleanerInterval) {
		for shard, opts := range b.compactedReplicas() {
			rep := b.replicas.get(shard)
			if rep == nil {
				continue
			}
			opts.NowMs = time.Now().UnixMilli()
			start := time.Now()
			res, err := rep.sm.Clean(opts)
			switch {
			case errors.Is(err, partition.ErrOffsetOutOfRange):
				// Retention deleted a segment under the pass: the next
				// one starts from what is left.
			case err != nil:
				b.Log.Warn("log compaction failed", "shard", shard, "error", err)
			case res.Cleaned:
				b.Metrics.Cleaned(res.BytesRemoved, res.RecordsRemoved)
				b.Log.Debug("log compacted", "shard", shard, "segments", res.SegmentsRead,
					"bytes_removed", res.BytesRemoved, "records_removed", res.RecordsRemoved, "took", time.Since(start))
			}
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// compactedReplicas returns the compaction settings of each partition this
// broker hosts whose topic is compacted.
func (b *Manager) compactedReplicas() map[uint64]partition.CleanOptions {
	out := map[uint64]partition.CleanOptions{}
	b.Meta.Read(func(s *meta.State) {
		for _, t := range s.Topics() {
			if !t.HasCleanupPolicy(meta.CleanupCompact) {
				continue
			}
			opts := partition.CleanOptions{
				DeleteRetentionMs:      t.Int(meta.ConfigDeleteRetentionMs),
				MinCompactionLagMs:     t.Int(meta.ConfigMinCompactionLagMs),
				MaxCompactionLagMs:     t.Int(meta.ConfigMaxCompactionLagMs),
				MinCleanableDirtyRatio: t.Float(meta.ConfigMinCleanableRatio),
			}
			for _, p := range t.Partitions {
				if slices.Contains(p.Replicas, b.cfg.ID) {
					out[p.Shard] = opts
				}
			}
		}
	})
	return out
}
