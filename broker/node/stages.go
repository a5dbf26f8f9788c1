package node

import (
	"time"

	"github.com/raftka/raftka/broker/raftlog"
)

// The stages of an acknowledged produce that are storage work inside its
// commit, as raftka_produce_stage_seconds reports them
// (docs/design/latency.md), timed on every broker that holds a replica,
// leader and followers. The leader's own stages (read, propose, commit,
// respond) are the front door's (package server).
const (
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

// Stage records how long a stage took; it implements server.Metrics.
func (m *metrics) Stage(name string, d time.Duration) {
	m.stages.WithLabelValues(name).Observe(d.Seconds())
}

// timedSave records the stages of a Raft log save.
func (m *metrics) timedSave(stage raftlog.SaveStage, d time.Duration) {
	switch stage {
	case raftlog.SaveFrames:
		m.Stage(stageFramesSync, d)
	case raftlog.SaveRecord:
		m.Stage(stageRecordSync, d)
	case raftlog.SaveFdatasync:
		m.Stage(stageFdatasync, d)
	}
}

// Applied implements replica.Metrics.
func (m *metrics) Applied(d time.Duration) { m.Stage(stageApply, d) }

// BudgetSnapshot implements replica.Metrics.
func (m *metrics) BudgetSnapshot() { m.budgetSnapshots.Inc() }

// Cleaned implements replica.Metrics.
func (m *metrics) Cleaned(bytes, records int64) {
	m.cleanedBytes.Add(float64(bytes))
	m.cleanedRecords.Add(float64(records))
}
