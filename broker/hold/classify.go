package hold

import (
	"context"

	"github.com/raftka/raftka/broker/growth"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// scanBytes bounds what one pass reads of a partition, so that a long
// backlog is classified over several passes rather than in one.
const scanBytes = 4 << 20

// scan is one old partition of a growth that this broker leads and has
// records after what its leader classified.
type scan struct {
	topic         string
	seq           int
	partition     int32
	from, to      int32 // the growth's partition counts
	partitioner   growth.Partitioner
	shard         uint64
	scanned, hold int64
	blocked       bool
}

// classify reads the records taken into each old partition this broker
// leads since the split, and reports what growth.Classify makes of them:
// the hold rises to the first record that moved in from another old
// partition, and the release past each stale record. Reading the
// committed log rather than each produce keeps the produce path as it is,
// and a new leader goes on from what the metadata recorded.
func classify(ctx context.Context, d Deps) {
	for _, sc := range pendingScans(d) {
		log, ok := d.Replicas.PartitionLog(sc.shard)
		if !ok {
			continue
		}
		c, ok := sc.read(log)
		if !ok {
			continue
		}
		if c.Release > 0 {
			c.StaleAt = d.Now().UnixMilli()
		}
		if _, err := propose(ctx, d, &meta.Command{AdvanceHold: &c}); err != nil {
			d.Log.Debug("hold not advanced, tried again", "topic", sc.topic, "partition", sc.partition, "err", err)
		}
	}
}

func pendingScans(d Deps) []scan {
	var out []scan
	d.Meta.Read(func(s *meta.State) {
		for _, t := range s.GrowingTopics() {
			for _, g := range t.Growths {
				for i, split := range g.Splits {
					shard := t.Partitions[i].Shard
					if split < 0 || !d.Replicas.IsLeader(shard) {
						continue
					}
					out = append(out, scan{topic: t.Name, seq: g.Seq, partition: int32(i), from: g.From, to: g.To,
						partitioner: t.GrowthPartitioner(), shard: shard, scanned: g.Scanned[i], hold: g.Holds[i], blocked: g.Blocked[i]})
				}
			}
		}
	})
	return out
}

// read classifies the records from sc.scanned up to the log end, or
// scanBytes of them; false if there was nothing new to read.
func (sc scan) read(log *partition.Log) (meta.AdvanceHold, bool) {
	c := meta.AdvanceHold{Topic: sc.topic, Seq: sc.seq, Partition: sc.partition, MovedIn: -1}
	start, end := log.Offsets()
	if end <= sc.scanned {
		return c, false
	}
	// Records retention removed meanwhile are read by no one: they hold
	// nothing back.
	c.Scanned = max(sc.scanned, start)
	for read := 0; c.Scanned < end && read < scanBytes; {
		batches, err := log.Read(c.Scanned, 1<<20)
		if err != nil || len(batches) == 0 {
			break
		}
		read += len(batches)
		next, err := partition.EachKey(batches, func(offset int64, key []byte) {
			if offset < c.Scanned || offset >= end {
				return
			}
			switch growth.Classify(sc.partitioner, key, sc.partition, sc.from, sc.to) {
			case growth.MovedIn:
				if !sc.blocked && c.MovedIn < 0 {
					c.MovedIn = offset
				}
			case growth.Stale:
				c.Release = offset + 1
			}
		})
		if err != nil || next <= c.Scanned {
			break
		}
		c.Scanned = min(next, end)
	}
	return c, c.Scanned > sc.scanned
}
