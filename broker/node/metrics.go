package node

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/growth"
	"github.com/raftka/raftka/broker/internal/volume"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
	"github.com/raftka/raftka/broker/raftlog"
	"github.com/raftka/raftka/broker/replica"
)

// metrics are the broker's Prometheus metrics. Partition gauges are read
// from the logs at scrape time rather than kept up to date on every write.
type metrics struct {
	registry *prometheus.Registry
	latency  *prometheus.HistogramVec
	stages   *prometheus.HistogramVec
	produced prometheus.Counter
	busy     prometheus.Counter
	// budgetSnapshots counts snapshots taken because the Raft log store
	// was over --raft-log-max-bytes.
	budgetSnapshots prometheus.Counter

	cleanedBytes, cleanedRecords prometheus.Counter

	// outOfOrder and duplicates count, per topic, the idempotent
	// producers' batches this broker refused as out of sequence and the
	// retries it answered without writing them again: the signal of a
	// gap or a duplicate that `raftka verify` looks for in the log.
	outOfOrder, duplicates *prometheus.CounterVec
	// authentications counts SASL exchanges by mechanism and result:
	// success, reauthentication or failure.
	authentications *prometheus.CounterVec
	// throttled counts responses throttled by a client quota, by quota.
	throttled *prometheus.CounterVec
	// bytesIn, recordsIn and bytesOut are each topic's traffic through
	// this broker: Kafka's BytesInPerSec, MessagesInPerSec and
	// BytesOutPerSec.
	bytesIn, recordsIn, bytesOut *prometheus.CounterVec
	// forcedLifts counts ordered growths this broker, as metadata leader,
	// lifted at their bound (package hold).
	forcedLifts *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "raftka_request_duration_seconds", Help: "Kafka request latency by API.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"api"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "raftka_produce_stage_seconds", Help: "Time an acknowledged produce spends in each stage: read, propose, commit, commit_spread (of a request for several partitions, its first result to its last) and respond on the partition leader; log_frames_sync, log_record_sync and apply on every replica's broker (docs/design/latency.md).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18)}, []string{"stage"}),
		busy:     prometheus.NewCounter(prometheus.CounterOpts{Name: "raftka_raft_busy_total", Help: "Proposals a partition's Raft group pushed back (system busy) and that were retried."}),
		produced: prometheus.NewCounter(prometheus.CounterOpts{Name: "raftka_produce_requests_total", Help: "Produce requests answered by this broker as leader."}),
		budgetSnapshots: prometheus.NewCounter(prometheus.CounterOpts{Name: "raftka_raft_log_budget_snapshots_total",
			Help: "Partition snapshots taken early, compacting a replica's whole Raft log, because the Raft log store held more than --raft-log-max-bytes."}),
		cleanedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "raftka_log_cleaner_bytes_removed_total",
			Help: "Segment bytes that log compaction (cleanup.policy=compact) removed from this broker's replicas."}),
		cleanedRecords: prometheus.NewCounter(prometheus.CounterOpts{Name: "raftka_log_cleaner_records_removed_total",
			Help: "Records that log compaction removed from this broker's replicas: older values of a key and expired tombstones."}),
		outOfOrder: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_produce_out_of_order_sequence_total",
			Help: "Produce batches this broker, as partition leader, answered OUT_OF_ORDER_SEQUENCE_NUMBER: an idempotent producer's sequence skipped ahead of what the partition holds."}, []string{"topic"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_produce_duplicate_batches_total",
			Help: "Idempotent producers' retried batches this broker, as partition leader, recognised and answered with their first offset without writing them again."}, []string{"topic"}),
		authentications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_sasl_authentications_total",
			Help: "SASL exchanges on this broker's SASL listeners by mechanism and result: success, reauthentication (KIP-368, on a connection already authenticated) or failure."}, []string{"mechanism", "result"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_client_quota_throttles_total",
			Help: "Responses this broker throttled because the client was over its quota, by quota: producer_byte_rate or consumer_byte_rate."}, []string{"quota"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_topic_bytes_in_total",
			Help: "Record bytes producers wrote to the topic's partitions this broker leads, as sent, counted once committed; a recognised retry is not counted again."}, []string{"topic"}),
		recordsIn: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_topic_records_in_total",
			Help: "Records producers wrote to the topic's partitions this broker leads, counted once committed."}, []string{"topic"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_topic_bytes_out_total",
			Help: "Record bytes this broker's fetch answers carried of the topic, to consumers and to replicas catching up."}, []string{"topic"}),
		forcedLifts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raftka_growth_forced_lifts_total",
			Help: "Ordered growths this broker, as metadata leader, lifted at raftka.growth.max.hold.ms before every counted group had drained the old partitions: a group may have read a key out of order."}, []string{"topic"}),
	}
	m.registry.MustRegister(m.latency, m.stages, m.produced, m.busy, m.budgetSnapshots, m.cleanedBytes, m.cleanedRecords, m.outOfOrder, m.duplicates, m.authentications, m.throttled, m.forcedLifts, m.bytesIn, m.recordsIn, m.bytesOut, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ProducedTo implements server.Metrics.
func (m *metrics) ProducedTo(topic string, bytes, records int) {
	m.bytesIn.WithLabelValues(topic).Add(float64(bytes))
	m.recordsIn.WithLabelValues(topic).Add(float64(records))
}

// Fetched implements server.Metrics.
func (m *metrics) Fetched(topic string, bytes int) {
	m.bytesOut.WithLabelValues(topic).Add(float64(bytes))
}

// Request implements server.Metrics.
func (m *metrics) Request(key int16, start time.Time) {
	m.latency.WithLabelValues(kmsg.NameForKey(key)).Observe(time.Since(start).Seconds())
}

// Produced implements server.Metrics.
func (m *metrics) Produced() { m.produced.Inc() }

// Busy implements server.Metrics.
func (m *metrics) Busy() { m.busy.Inc() }

// OutOfOrder implements server.Metrics.
func (m *metrics) OutOfOrder(topic string) { m.outOfOrder.WithLabelValues(topic).Inc() }

// Duplicate implements server.Metrics.
func (m *metrics) Duplicate(topic string) { m.duplicates.WithLabelValues(topic).Inc() }

// Lifted implements hold.Metrics.
func (m *metrics) Lifted(topic string, reason growth.Reason) {
	if reason == growth.Bound {
		m.forcedLifts.WithLabelValues(topic).Inc()
	}
}

// Authentication implements server.Metrics.
func (m *metrics) Authentication(mechanism, result string) {
	m.authentications.WithLabelValues(mechanism, result).Inc()
}

var (
	descHeldRecords   = prometheus.NewDesc("raftka_growth_held_records", "Records of a partition this broker leads that an ordered growth holds back from consumers: the log end less the hold.", []string{"topic", "partition"}, nil)
	descHoldAge       = prometheus.NewDesc("raftka_growth_hold_age_seconds", "How long a topic's earliest ordered growth has held its consumers; every broker reports the same.", []string{"topic"}, nil)
	descHighWatermark = prometheus.NewDesc("raftka_partition_high_watermark", "High watermark of a hosted partition replica.", []string{"topic", "partition"}, nil)
	descLogStart      = prometheus.NewDesc("raftka_partition_log_start_offset", "Log start offset of a hosted partition replica.", []string{"topic", "partition"}, nil)
	descSize          = prometheus.NewDesc("raftka_partition_size_bytes", "Bytes on disk of a hosted partition replica.", []string{"topic", "partition"}, nil)
	descUnder         = prometheus.NewDesc("raftka_under_replicated_partitions", "Partitions led by this broker with a replica that is not in sync: on a broker that does not answer, or behind for longer than --replica-lag-max.", nil, nil)
	descLeaders       = prometheus.NewDesc("raftka_leader_partitions", "Partitions this broker leads.", nil, nil)
	descSnapshots     = prometheus.NewDesc("raftka_partition_snapshots_recovered_total", "Partition replicas rebuilt from a leader's snapshot since the broker started.", nil, nil)
	descSnapshotBytes = prometheus.NewDesc("raftka_partition_snapshot_fetched_bytes_total", "Record bytes fetched from peers by replicas recovering from snapshots since the broker started: only what they lacked.", nil, nil)
	descLeadersWon    = prometheus.NewDesc("raftka_partition_leaderships_won_total", "Partition leaderships this broker took since it started, by election or transfer.", nil, nil)
	descReplicas      = prometheus.NewDesc("raftka_hosted_replicas", "Partition replicas this broker hosts.", nil, nil)
	descLeaderless    = prometheus.NewDesc("raftka_partitions_without_leader", "Hosted partitions whose Raft group has had no leader for several election timeouts: fewer than a quorum of their replicas are up with their data.", nil, nil)
	descObservers     = prometheus.NewDesc("raftka_observer_replicas", "Hosted partition replicas that are non-voting observers, catching up before their promotion.", nil, nil)
	descWaitingFiles  = prometheus.NewDesc("raftka_replicas_waiting_for_open_files", "Partition replicas placed on this broker that it does not start, for want of open files: raise its open-file limit (process_max_fds).", nil, nil)
	descGeneration    = prometheus.NewDesc("raftka_broker_generation", "This broker's incarnation number: it grows each time the broker starts on an empty data directory.", nil, nil)
	descMemberChanges = prometheus.NewDesc("raftka_partition_membership_changes_total", "Raft membership changes this broker made as a partition leader: replaced incarnations removed, new ones added and promoted.", nil, nil)

	descRaftLogFiles     = prometheus.NewDesc("raftka_raft_log_files", "Files of the Raft log store (--raft-log-store wal).", nil, nil)
	descRaftLogBytes     = prometheus.NewDesc("raftka_raft_log_bytes", "Bytes in the Raft log store's files.", nil, nil)
	descRaftLogSpares    = prometheus.NewDesc("raftka_raft_log_spare_files", "Emptied Raft log files kept to be written over (at most 2): writing in place spares each fdatasync a metadata write.", nil, nil)
	descRaftLogReused    = prometheus.NewDesc("raftka_raft_log_files_reused_total", "Raft log files started by writing over a spare.", nil, nil)
	descRaftLogSyncs     = prometheus.NewDesc("raftka_raft_log_syncs_total", "fdatasync calls of the Raft log store; concurrent saves share one.", nil, nil)
	descRaftLogSyncSecs  = prometheus.NewDesc("raftka_raft_log_sync_seconds_total", "Time the Raft log store spent in fdatasync.", nil, nil)
	descRaftLogRelocated = prometheus.NewDesc("raftka_raft_log_relocated_bytes_total", "Live Raft entries the log store copied out of mostly dead files so the files could go.", nil, nil)
)

// partitionCollector reads the hosted replicas' gauges at scrape time.
type partitionCollector struct {
	id         int32
	meta       *meta.StateMachine
	replicas   *replica.Manager
	generation func() uint32
	// raftLog is the wal Raft log store once it opened; nil with pebble.
	raftLog *atomic.Pointer[raftlog.Store]
}

func (c partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHeldRecords, descHoldAge, descHighWatermark, descLogStart, descSize, descUnder, descLeaders, descReplicas, descSnapshots, descSnapshotBytes, descLeadersWon,
		descLeaderless, descObservers, descWaitingFiles, descGeneration, descMemberChanges,
		descRaftLogFiles, descRaftLogBytes, descRaftLogSpares, descRaftLogReused, descRaftLogSyncs, descRaftLogSyncSecs, descRaftLogRelocated} {
		ch <- d
	}
}

func (c partitionCollector) Collect(ch chan<- prometheus.Metric) {
	leaders, under, observers := 0, 0, 0
	for _, h := range c.meta.HostedPartitions(c.id, nil) {
		rep := c.replicas.Replica(h.Shard)
		if rep == nil {
			continue
		}
		if rep.Observer() {
			observers++
		}
		l := rep.StateMachine().Log()
		start, end := l.Offsets()
		part := itoa(h.Index)
		ch <- prometheus.MustNewConstMetric(descHighWatermark, prometheus.GaugeValue, float64(end), h.Topic, part)
		ch <- prometheus.MustNewConstMetric(descLogStart, prometheus.GaugeValue, float64(start), h.Topic, part)
		ch <- prometheus.MustNewConstMetric(descSize, prometheus.GaugeValue, float64(l.SizeBytes()), h.Topic, part)
		if c.replicas.IsLeader(h.Shard) {
			if h.Held {
				ch <- prometheus.MustNewConstMetric(descHeldRecords, prometheus.GaugeValue, float64(max(end-h.Hold, 0)), h.Topic, part)
			}
			leaders++
			if len(c.replicas.InSyncReplicas(h.Shard, h.Replicas)) < len(h.Replicas) {
				under++
			}
		}
	}
	var held map[string]int64
	c.meta.Read(func(s *meta.State) { held = s.HeldSince() })
	for topic, since := range held {
		ch <- prometheus.MustNewConstMetric(descHoldAge, prometheus.GaugeValue, time.Since(time.UnixMilli(since)).Seconds(), topic)
	}
	ch <- prometheus.MustNewConstMetric(descUnder, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(descLeaders, prometheus.GaugeValue, float64(leaders))
	ch <- prometheus.MustNewConstMetric(descReplicas, prometheus.GaugeValue, float64(c.replicas.Count()))
	ch <- prometheus.MustNewConstMetric(descLeaderless, prometheus.GaugeValue, float64(c.replicas.WithoutLeader(time.Now())))
	ch <- prometheus.MustNewConstMetric(descObservers, prometheus.GaugeValue, float64(observers))
	ch <- prometheus.MustNewConstMetric(descWaitingFiles, prometheus.GaugeValue, float64(c.replicas.WaitingForFiles()))
	ch <- prometheus.MustNewConstMetric(descGeneration, prometheus.GaugeValue, float64(c.generation()))
	ch <- prometheus.MustNewConstMetric(descMemberChanges, prometheus.CounterValue, float64(c.replicas.MemberChanges()))
	ch <- prometheus.MustNewConstMetric(descSnapshots, prometheus.CounterValue, float64(partition.SnapshotsRecovered.Load()))
	ch <- prometheus.MustNewConstMetric(descLeadersWon, prometheus.CounterValue, float64(c.replicas.LeadershipsWon()))
	ch <- prometheus.MustNewConstMetric(descSnapshotBytes, prometheus.CounterValue, float64(partition.SnapshotBytesFetched.Load()))
	if raftLog := c.raftLog.Load(); raftLog != nil {
		st := raftLog.Stats()
		ch <- prometheus.MustNewConstMetric(descRaftLogFiles, prometheus.GaugeValue, float64(st.Files))
		ch <- prometheus.MustNewConstMetric(descRaftLogBytes, prometheus.GaugeValue, float64(st.Bytes))
		ch <- prometheus.MustNewConstMetric(descRaftLogSpares, prometheus.GaugeValue, float64(st.SpareFiles))
		ch <- prometheus.MustNewConstMetric(descRaftLogReused, prometheus.CounterValue, float64(st.ReusedFiles))
		ch <- prometheus.MustNewConstMetric(descRaftLogSyncs, prometheus.CounterValue, float64(st.Syncs))
		ch <- prometheus.MustNewConstMetric(descRaftLogSyncSecs, prometheus.CounterValue, st.SyncSeconds)
		ch <- prometheus.MustNewConstMetric(descRaftLogRelocated, prometheus.CounterValue, float64(st.RelocatedBytes))
	}
}

var (
	descDiskTotal   = prometheus.NewDesc("raftka_disk_total_bytes", "Size of the file system that holds the data directory.", nil, nil)
	descDiskFree    = prometheus.NewDesc("raftka_disk_free_bytes", "Bytes of the data directory's file system this broker may still use.", nil, nil)
	descDiskMinFree = prometheus.NewDesc("raftka_disk_min_free_bytes", "Free space under which this broker refuses produce with KAFKA_STORAGE_ERROR (--min-free-bytes); 0 for no bound.", nil, nil)
)

// diskCollector reads the data directory's file system at scrape time,
// for the disk panels and the disk-nearly-full alert.
type diskCollector struct {
	dir     string
	minFree int64
}

func (c diskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDiskTotal
	ch <- descDiskFree
	ch <- descDiskMinFree
}

func (c diskCollector) Collect(ch chan<- prometheus.Metric) {
	if total, usable, err := volume.Bytes(c.dir); err == nil {
		ch <- prometheus.MustNewConstMetric(descDiskTotal, prometheus.GaugeValue, float64(total))
		ch <- prometheus.MustNewConstMetric(descDiskFree, prometheus.GaugeValue, float64(usable))
	}
	ch <- prometheus.MustNewConstMetric(descDiskMinFree, prometheus.GaugeValue, float64(max(c.minFree, 0)))
}
