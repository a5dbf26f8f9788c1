package hold

import (
	"context"

	"github.com/raftka/raftka/broker/meta"
)

// reportDelivered proposes, for each old partition of a visible growth
// that this broker leads, where the records a consumer is given below its
// release end (partition.Log.DeliveredEnd). A read_committed group that
// read them all commits there, before any marker or aborted record that
// ends the stretch, so the release is lowered to it (meta.Growth.Rule);
// without it such a group would hold the growth until its bound.
func reportDelivered(ctx context.Context, d Deps) {
	type report struct {
		cmd   meta.RecordDelivered
		shard uint64
	}
	var todo []report
	d.Meta.Read(func(s *meta.State) {
		if !s.AllBrokersHave(meta.FeatureGrowthDelivered) {
			return // a replica without the command would not apply it
		}
		for _, t := range s.GrowingTopics() {
			for _, g := range t.Growths {
				if g.Hidden() {
					continue
				}
				for i, release := range g.Releases {
					shard := t.Partitions[i].Shard
					if release <= 0 || g.DeliveredOf(int32(i)) >= 0 || !d.Replicas.IsLeader(shard) {
						continue
					}
					todo = append(todo, report{meta.RecordDelivered{Topic: t.Name, Seq: g.Seq, Partition: int32(i), Release: release}, shard})
				}
			}
		}
	})
	for _, r := range todo {
		log, ok := d.Replicas.PartitionLog(r.shard)
		if !ok {
			continue
		}
		c := r.cmd
		if c.Offset, ok = log.DeliveredEnd(c.Release); !ok {
			continue // a transaction below the release is open
		}
		if _, err := propose(ctx, d, &meta.Command{RecordDelivered: &c}); err != nil {
			d.Log.Debug("delivered end not recorded, tried again", "topic", c.Topic, "partition", c.Partition, "err", err)
		}
	}
}
