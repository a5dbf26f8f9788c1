package server

import (
	"context"
	"time"

	"github.com/lni/dragonboat/v3"
)

// Every partition replica bounds its own Raft log by bytes, not only by
// entries: a Kafka batch may be a few bytes or a megabyte, so the entry
// count alone (SnapshotEntries, 5,000 by default) would let a partition
// written in large batches keep gigabytes of Raft log on disk. A short log
// also costs less to write: an entry deleted while it is still in the log
// store's memtable is never flushed to a disk table, so it is written once
// (to the write-ahead log) instead of two or more times. Measured in the
// produce benchmark with 1 GB produced: 7.3 bytes written per byte
// produced with 4 MiB intervals and a 128 MiB memtable, against 10.5 with
// 5,000-entry snapshots and 64 MiB, and 1.24 times the records per second
// (2 alternating rounds of each, one run).
//
// A snapshot of a partition is cheap (it is an on-disk state machine:
// Dragonboat records the index after Sync, the data is already in
// segments), so one is taken whenever RaftLogRetainBytes more bytes were
// applied, and the log is compacted up to the previous snapshot: a replica
// keeps between one and two such intervals for followers that lag a
// little. A follower further behind catches up from a snapshot, which
// brings it only the records it lacks (partition.StateMachine's
// RecoverFromSnapshot).

const (
	raftLogCompactionTick = 100 * time.Millisecond
	snapshotTimeout       = 10 * time.Second
)

// logCompaction is the snapshot bookkeeping of one replica, owned by the
// compactRaftLogs loop.
type logCompaction struct {
	index, bytes uint64 // applied index and bytes at the last snapshot
	pending      *dragonboat.RequestState
	pendingIndex uint64
	pendingBytes uint64
}

func (b *Broker) compactRaftLogs(ctx context.Context) {
	if b.cfg.RaftLogRetainBytes <= 0 {
		return
	}
	for sleep(ctx, raftLogCompactionTick) {
		for _, shard := range b.replicas.shards() {
			if rep := b.replicas.get(shard); rep != nil {
				b.compactRaftLog(rep)
			}
		}
	}
}

// compactRaftLog advances one replica's snapshot bookkeeping without
// waiting: a snapshot request is checked on later ticks.
func (b *Broker) compactRaftLog(rep *replica) {
	c := &rep.compaction
	if c.pending != nil {
		select {
		case res := <-c.pending.ResultC():
			c.pending.Release()
			c.pending = nil
			if res.Completed() {
				c.index, c.bytes = c.pendingIndex, c.pendingBytes
			}
		default:
			return
		}
	}
	index, bytes := rep.sm.AppliedProgress()
	if bytes-c.bytes < uint64(b.cfg.RaftLogRetainBytes) || index <= c.index {
		return
	}
	rs, err := b.nh.RequestSnapshot(rep.shard, dragonboat.SnapshotOption{OverrideCompactionOverhead: true, CompactionOverhead: index - c.index}, snapshotTimeout)
	if err != nil {
		b.log.Debug("partition snapshot not requested", "shard", rep.shard, "error", err)
		return
	}
	c.pending, c.pendingIndex, c.pendingBytes = rs, index, bytes
}
