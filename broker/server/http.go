package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// serveHTTP serves /metrics, /readyz and /safe-to-restart for Prometheus,
// the kubelet and the operator, and the endpoints brokers ask each other
// when they start (cluster.Incarnation). It starts before Raft does; the
// endpoints that need Raft answer 503 until it runs.
func (b *Broker) serveHTTP(ctx context.Context, ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /internal/identity", b.incarnation.HandleIdentity)
	mux.Handle("/metrics", b.afterStart(promhttp.HandlerFor(b.metrics.registry, promhttp.HandlerOpts{})))
	mux.Handle("/readyz", b.afterStart(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeCheck(w, b.Readiness()) })))
	mux.Handle("/safe-to-restart", b.afterStart(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeCheck(w, b.SafeToRestart()) })))
	mux.Handle("POST /internal/join", b.peerHTTP.OnlyPeers(b.afterStart(http.HandlerFunc(b.incarnation.HandleJoin))))
	mux.Handle("GET /internal/replica", b.peerHTTP.OnlyPeers(b.afterStart(http.HandlerFunc(b.replicas.HandleReplica))))
	if b.cfg.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	// A refused handshake (a scanner, a client of another CA) is the
	// caller's business; it is logged at debug.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(b.log.Handler(), slog.LevelDebug)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	_ = srv.Serve(b.peerHTTP.Listen(ln))
}

// afterStart answers 503 until the broker's Raft runs.
func (b *Broker) afterStart(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-b.started:
			h.ServeHTTP(w, r)
		default:
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
	})
}

// Check is the answer of a health check: OK, or the reasons it is not.
type Check struct {
	OK      bool     `json:"ok"`
	Reasons []string `json:"reasons,omitempty"`
}

func writeCheck(w http.ResponseWriter, c Check) {
	w.Header().Set("Content-Type", "application/json")
	if !c.OK {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(c)
}

// Readiness is OK once the broker is registered, the metadata group has a
// leader, and every partition replica it hosts has a leader.
func (b *Broker) Readiness() Check {
	var reasons []string
	now := time.Now()
	switch leader, ok, err := b.nh.GetLeaderID(meta.MetadataShard); {
	case errors.Is(err, dragonboat.ErrClusterNotFound):
		reasons = append(reasons, "removed from the metadata group (RemoveRaftVoter): this broker is leaving the cluster")
	case (err != nil || !ok || leader == 0) && !b.replicas.Electing(meta.MetadataShard, now):
		reasons = append(reasons, "metadata group has no leader")
	}
	if _, registered := b.meta.Broker(b.cfg.ID); !registered {
		reasons = append(reasons, "broker not registered yet")
	}
	// A replica still joining its group is not ready; a group electing a
	// new leader after another broker's restart does not make this one
	// unready, or a rolling restart would see two brokers down at once.
	leaderless := 0
	for _, shard := range b.replicas.Shards() {
		if _, ok, err := b.nh.GetLeaderID(shard); (err != nil || !ok) && !b.replicas.Electing(shard, now) {
			leaderless++
		}
	}
	if leaderless > 0 {
		reasons = append(reasons, plural(leaderless, "hosted partition has", "hosted partitions have")+" no leader")
	}
	return Check{OK: len(reasons) == 0, Reasons: reasons}
}

// SafeToRestart is OK when every Raft group this broker belongs to keeps a
// quorum of live voters without it. The voters are the group's members as
// this broker's replica knows them: a replica still catching up as an
// observer does not count, nor does the node of an incarnation its broker
// replaced.
func (b *Broker) SafeToRestart() Check {
	var reasons []string
	voters := map[uint64][]int32{}
	if info := b.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true}); info != nil {
		b.meta.Read(func(s *meta.State) {
			for _, ci := range info.ClusterInfoList {
				if ci.Pending {
					continue
				}
				current := func(id int32) uint64 { br, _ := s.Broker(id); return br.Node() }
				if _, p := s.PartitionOfShard(ci.ClusterID); p != nil {
					current = p.NodeOf
				}
				voters[ci.ClusterID] = voterBrokers(ci.Nodes, current)
			}
		})
	}
	if !b.keepsQuorumWithoutMe(voters[meta.MetadataShard]) {
		reasons = append(reasons, "metadata group would lose its quorum")
	}
	var lost []string
	for _, h := range b.meta.HostedPartitions(b.cfg.ID, nil) {
		members, known := voters[h.Shard]
		if !known {
			members = h.Replicas
		}
		if !b.keepsQuorumWithoutMe(members) {
			lost = append(lost, h.Topic+"-"+itoa(h.Index))
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		if len(lost) > 10 {
			lost = append(lost[:10], "...")
		}
		reasons = append(reasons, "partitions would lose their quorum: "+joinComma(lost))
	}
	return Check{OK: len(reasons) == 0, Reasons: reasons}
}

// voterBrokers names the broker of each voter node, or -1 for a node
// its broker no longer runs (current names the node it runs), which never
// answers again.
func voterBrokers(nodes map[uint64]string, current func(broker int32) uint64) []int32 {
	out := make([]int32, 0, len(nodes))
	for n := range nodes {
		if id := meta.BrokerOfNode(n); current(id) == n {
			out = append(out, id)
		} else {
			out = append(out, -1)
		}
	}
	return out
}

func (b *Broker) keepsQuorumWithoutMe(members []int32) bool {
	live := 0
	for _, id := range members {
		if id != b.cfg.ID && b.liveness.IsLive(id) {
			live++
		}
	}
	return live >= len(members)/2+1
}

func containsID(ids []int32, id int32) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

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
}

func newMetrics(b *Broker) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "raftka_request_duration_seconds", Help: "Kafka request latency by API.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"api"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "raftka_produce_stage_seconds", Help: "Time an acknowledged produce spends in each stage: read, propose, commit and respond on the partition leader; log_frames_sync, log_record_sync and apply on every replica's broker (docs/design/latency.md).",
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
	}
	m.registry.MustRegister(m.latency, m.stages, m.produced, m.busy, m.budgetSnapshots, m.cleanedBytes, m.cleanedRecords, m.outOfOrder, m.duplicates, m.authentications, m.throttled, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), partitionCollector{b})
	return m
}

func (m *metrics) observe(key int16, start time.Time) {
	m.latency.WithLabelValues(apiName(key)).Observe(time.Since(start).Seconds())
}

var (
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

type partitionCollector struct{ b *Broker }

func (c partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHighWatermark, descLogStart, descSize, descUnder, descLeaders, descReplicas, descSnapshots, descSnapshotBytes, descLeadersWon,
		descLeaderless, descObservers, descGeneration, descMemberChanges,
		descRaftLogFiles, descRaftLogBytes, descRaftLogSpares, descRaftLogReused, descRaftLogSyncs, descRaftLogSyncSecs, descRaftLogRelocated} {
		ch <- d
	}
}

func (c partitionCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	leaders, under, observers := 0, 0, 0
	for _, h := range b.meta.HostedPartitions(b.cfg.ID, nil) {
		rep := b.replicas.Replica(h.Shard)
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
		if b.replicas.IsLeader(h.Shard) {
			leaders++
			if len(b.replicas.InSyncReplicas(h.Shard, h.Replicas)) < len(h.Replicas) {
				under++
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(descUnder, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(descLeaders, prometheus.GaugeValue, float64(leaders))
	ch <- prometheus.MustNewConstMetric(descReplicas, prometheus.GaugeValue, float64(b.replicas.Count()))
	ch <- prometheus.MustNewConstMetric(descLeaderless, prometheus.GaugeValue, float64(b.replicas.WithoutLeader(time.Now())))
	ch <- prometheus.MustNewConstMetric(descObservers, prometheus.GaugeValue, float64(observers))
	ch <- prometheus.MustNewConstMetric(descGeneration, prometheus.GaugeValue, float64(b.incarnation.Generation()))
	ch <- prometheus.MustNewConstMetric(descMemberChanges, prometheus.CounterValue, float64(b.replicas.MemberChanges()))
	ch <- prometheus.MustNewConstMetric(descSnapshots, prometheus.CounterValue, float64(partition.SnapshotsRecovered.Load()))
	ch <- prometheus.MustNewConstMetric(descLeadersWon, prometheus.CounterValue, float64(b.replicas.LeadershipsWon()))
	ch <- prometheus.MustNewConstMetric(descSnapshotBytes, prometheus.CounterValue, float64(partition.SnapshotBytesFetched.Load()))
	if b.raftLog != nil {
		st := b.raftLog.Stats()
		ch <- prometheus.MustNewConstMetric(descRaftLogFiles, prometheus.GaugeValue, float64(st.Files))
		ch <- prometheus.MustNewConstMetric(descRaftLogBytes, prometheus.GaugeValue, float64(st.Bytes))
		ch <- prometheus.MustNewConstMetric(descRaftLogSpares, prometheus.GaugeValue, float64(st.SpareFiles))
		ch <- prometheus.MustNewConstMetric(descRaftLogReused, prometheus.CounterValue, float64(st.ReusedFiles))
		ch <- prometheus.MustNewConstMetric(descRaftLogSyncs, prometheus.CounterValue, float64(st.Syncs))
		ch <- prometheus.MustNewConstMetric(descRaftLogSyncSecs, prometheus.CounterValue, st.SyncSeconds)
		ch <- prometheus.MustNewConstMetric(descRaftLogRelocated, prometheus.CounterValue, float64(st.RelocatedBytes))
	}
}
