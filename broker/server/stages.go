package server

import (
	"time"

	"github.com/raftka/raftka/broker/raftlog"
)

// The stages of an acknowledged produce, as raftka_produce_stage_seconds
// reports them (docs/design/latency.md). The first four are timed by
// the partition leader's connection and request handler and add up to its
// part of a produce's latency; the others are the storage work inside
// commit, timed on every broker that holds a replica, leader and
// followers.
const (
	// stageRead: the request's size read off the socket, to its handler
	// beginning (the body's transfer, which a large request spreads over
	// many reads, its decoding and the connection's admission checks).
	// The time a request waits in the socket before its size is read is
	// not in it: the kernel does not say when bytes arrived.
	stageRead = "read"
	// stagePropose: the request's handler began, to every partition's
	// batches queued in its Raft group (validation, recompression,
	// waiting out a full proposal queue).
	stagePropose = "propose"
	// stageCommit: queued, to the last partition's result (the leader's
	// log write, replication, a majority's fsync, commit and apply).
	stageCommit = "commit"
	// stageRespond: the results, to the response written to the socket,
	// behind the connection's earlier responses.
	stageRespond = "respond"
	// stageFramesSync: a Raft log save's entries written to their
	// partitions' frame files and fsynced; only saves above
	// --raft-log-copy-bytes fsync their frames, smaller ones copy them
	// into their record.
	stageFramesSync = "log_frames_sync"
	// stageRecordSync: then the save's record written to the shared
	// Raft log and fsynced (concurrent saves share an fsync).
	stageRecordSync = "log_record_sync"
	// stageFdatasync: one fdatasync of the shared Raft log, which the
	// saves waiting for it share.
	stageFdatasync = "log_fdatasync"
	// stageApply: a partition replica's state machine applying committed
	// entries (its segment and checkpoint).
	stageApply = "apply"
)

// stage records how long a stage took.
func (m *metrics) stage(name string, d time.Duration) {
	m.stages.WithLabelValues(name).Observe(d.Seconds())
}

// timedSave records the stages of a Raft log save.
func (m *metrics) timedSave(stage raftlog.SaveStage, d time.Duration) {
	switch stage {
	case raftlog.SaveFrames:
		m.stage(stageFramesSync, d)
	case raftlog.SaveRecord:
		m.stage(stageRecordSync, d)
	case raftlog.SaveFdatasync:
		m.stage(stageFdatasync, d)
	}
}

// Applied implements replica.Metrics.
func (m *metrics) Applied(d time.Duration) { m.stage(stageApply, d) }

// BudgetSnapshot implements replica.Metrics.
func (m *metrics) BudgetSnapshot() { m.budgetSnapshots.Inc() }

// Cleaned implements replica.Metrics.
func (m *metrics) Cleaned(bytes, records int64) {
	m.cleanedBytes.Add(float64(bytes))
	m.cleanedRecords.Add(float64(records))
}
