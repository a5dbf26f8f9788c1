package replica

import (
	"context"
	"time"

	"github.com/lni/dragonboat/v3"

	"github.com/raftka/raftka/broker/internal/wait"
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
//
// The intervals are per replica, so a broker's Raft log holds one to two
// of them for every busy partition: with many, gigabytes, in files that
// each hold entries of all of them and go only once the last of them has
// compacted past them. --raft-log-max-bytes bounds the whole: while the
// store's files hold more, the replicas with live entries in the oldest
// files, those that must go for the rest to fit, take a snapshot now and
// compact their whole log, and the store starts a new file as soon as
// that empties old ones, which it then deletes (a snapshot keeps the entry
// at its index: the roll copies such last entries of quiet groups
// forward). A follower that lags catches up from a snapshot sooner then,
// and while over the bound the store copies forward more, as its rolls
// come sooner: the bound is for many busy partitions, not for the few
// that a default broker's gigabyte holds.

const (
	raftLogTrimTick       = 100 * time.Millisecond
	snapshotTimeout       = 10 * time.Second
	budgetCheckInterval   = 250 * time.Millisecond
	otherSnapshotInterval = 5 * time.Second
)

// raftLogTrim is the snapshot bookkeeping of one replica, owned by the
// raftLogTrimmer loop.
type raftLogTrim struct {
	index, bytes uint64 // applied index and bytes at the last snapshot
	pending      *dragonboat.RequestState
	pendingIndex uint64
	pendingBytes uint64
}

// raftLogTrimmer keeps the broker's Raft logs short by taking snapshots,
// after which Dragonboat compacts the log (Raft's word; Kafka's log
// compaction, cleanup.policy=compact, is the log cleaner's: logcleaner.go).
type raftLogTrimmer struct{ b *Manager }

func (t raftLogTrimmer) run(ctx context.Context) {
	b := t.b
	if b.cfg.RaftLogRetainBytes <= 0 {
		return
	}
	var lastBudgetCheck time.Time
	otherSnapshots := map[uint64]time.Time{} // groups that are not partitions: the metadata group
	for wait.Sleep(ctx, raftLogTrimTick) {
		var pinning map[uint64]bool
		if b.raftLog != nil && b.cfg.RaftLogMaxBytes > 0 && time.Since(lastBudgetCheck) >= budgetCheckInterval &&
			b.raftLog.Stats().Bytes > b.cfg.RaftLogMaxBytes {
			lastBudgetCheck = time.Now()
			// What the groups compacted since the last check goes now, not
			// when the active file fills.
			if _, err := b.raftLog.Reclaim(); err != nil {
				b.Log.Warn("raft log reclaim failed", "error", err)
			}
			pinning = map[uint64]bool{}
			for _, g := range b.raftLog.GroupsPinningOldest(b.cfg.RaftLogMaxBytes) {
				pinning[g] = true
				if b.replicas.get(g) == nil && time.Since(otherSnapshots[g]) >= otherSnapshotInterval {
					otherSnapshots[g] = time.Now()
					t.trimWhole(g)
				}
			}
		}
		for _, shard := range b.replicas.shards() {
			if rep := b.replicas.get(shard); rep != nil {
				t.trim(rep, pinning[shard])
			}
		}
	}
}

// trimWhole asks a group that is not a partition (the metadata group,
// whose snapshots copy its whole state, so at most every
// otherSnapshotInterval) for a snapshot that compacts its whole Raft log,
// without waiting for it.
func (t raftLogTrimmer) trimWhole(shard uint64) {
	b := t.b
	if _, err := b.nh.RequestSnapshot(shard, dragonboat.SnapshotOption{OverrideCompactionOverhead: true}, snapshotTimeout); err != nil {
		b.Log.Debug("snapshot not requested", "shard", shard, "error", err)
		return
	}
	b.Metrics.BudgetSnapshot()
}

// trim advances one replica's snapshot bookkeeping without waiting: a
// snapshot request is checked on later ticks.
func (t raftLogTrimmer) trim(rep *Replica, pinsOldFiles bool) {
	b := t.b
	c := &rep.raftLogTrim
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
	due, overhead := bytes-c.bytes >= uint64(b.cfg.RaftLogRetainBytes), index-c.index
	if pinsOldFiles {
		due, overhead = true, 0
	}
	if !due || index <= c.index {
		return
	}
	rs, err := b.nh.RequestSnapshot(rep.shard, dragonboat.SnapshotOption{OverrideCompactionOverhead: true, CompactionOverhead: overhead}, snapshotTimeout)
	if err != nil {
		b.Log.Debug("partition snapshot not requested", "shard", rep.shard, "error", err)
		return
	}
	if pinsOldFiles {
		b.Metrics.BudgetSnapshot()
	}
	c.pending, c.pendingIndex, c.pendingBytes = rs, index, bytes
}
