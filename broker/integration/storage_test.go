package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
)

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLaggingReplicaCatchesUpFromSnapshot: a replica that was down while
// more was produced than the Raft logs keep (4 KiB to 8 KiB of entries
// here; the entry count alone would keep 100,000) catches up from a
// snapshot, fetching from its peers only the records it lacks, and then
// holds them all; also where the brokers authenticate to each other
// (SASL_PLAINTEXT inter-broker listener, ACL authorizer on), as the
// operator runs them, and where they do so over TLS (SASL_SSL).
func TestLaggingReplicaCatchesUpFromSnapshot(t *testing.T) {
	t.Run("plaintext", func(t *testing.T) { testSnapshotCatchUp(t, brokertest.Options{}) })
	t.Run("authenticated", func(t *testing.T) {
		testSnapshotCatchUp(t, brokertest.Options{InterBrokerUser: &brokertest.User{Name: "raftka-broker", Password: "inter-broker-secret"},
			ExtraFlags: []string{"--authorizer", "acl"}})
	})
	t.Run("authenticated over TLS", func(t *testing.T) {
		testSnapshotCatchUp(t, brokertest.Options{InterBrokerUser: &brokertest.User{Name: "raftka-broker", Password: "inter-broker-secret"},
			InterBrokerTLS: true, ExtraFlags: []string{"--authorizer", "acl"}})
	})
}

func testSnapshotCatchUp(t *testing.T, opts brokertest.Options) {
	opts.Brokers = 3
	opts.ExtraFlags = append(opts.ExtraFlags, "--raft-snapshot-entries", "100000", "--raft-log-retain-bytes", "4096")
	c := brokertest.Start(t, opts)
	c.CreateTopic("history", 1, 3, nil)
	leader := c.LeaderOf("history", 0)
	lagging := (leader + 1) % 3
	// One produce request per record: one Raft entry each.
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(1))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	produceRange := func(from, to int) {
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "history", Value: []byte(itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produceRange(0, 400)
	waitFor(t, 30*time.Second, "every replica to hold the first records", func() bool {
		hw, ok := c.Metric(lagging, "raftka_partition_high_watermark", `topic="history"`)
		return ok && hw == 400
	})
	had, _ := c.Metric(lagging, "raftka_partition_size_bytes", `topic="history"`)
	c.Kill(lagging)
	produceRange(400, 800) // 400 entries, about 30 KB
	total, _ := c.Metric(leader, "raftka_partition_size_bytes", `topic="history"`)
	// A consumer quota of 100 bytes/s for every client id leaves the
	// brokers' own fetches for their replicas alone, as in Kafka.
	setDefaultConsumerQuota := func(op kadm.AlterClientQuotaOp) {
		if _, err := c.Admin().AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "client-id"}},
			Ops: []kadm.AlterClientQuotaOp{op}}}); err != nil {
			t.Fatal(err)
		}
	}
	setDefaultConsumerQuota(kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: 100})
	c.Restart(lagging)
	c.WaitReady(lagging)
	waitFor(t, 30*time.Second, "the restarted replica to catch up", func() bool {
		hw, ok := c.Metric(lagging, "raftka_partition_high_watermark", `topic="history"`)
		return ok && hw == 800
	})
	setDefaultConsumerQuota(kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Remove: true})
	if n, _ := c.Metric(lagging, "raftka_partition_snapshots_recovered_total"); n < 1 {
		t.Fatalf("the replica caught up without a snapshot (%v recovered): the test did not exercise snapshots", n)
	}
	if fetched, _ := c.Metric(lagging, "raftka_partition_snapshot_fetched_bytes_total"); fetched != total-had {
		t.Fatalf("the replica fetched %v bytes from its peers; it lacked %v of %v", fetched, total-had, total)
	}
	// The caught-up replica holds every batch the leader serves, byte for
	// byte: its own log, read as a follower catching up reads it.
	topics, err := c.Admin().ListTopics(ctx, "history")
	if err != nil {
		t.Fatal(err)
	}
	direct := brokerClient(ctx, t, c)
	// From whichever broker leads now: leadership may have moved meanwhile.
	var served map[int64]int32
	var end int64
	waitFor(t, 30*time.Second, "the leader to serve every record", func() bool {
		served, end, err = fetchBatches(ctx, direct, int32(c.LeaderOf("history", 0)), "history", topics["history"].ID, 0, false)
		return err == nil && end == 800
	})
	held, end, err := fetchBatches(ctx, direct, int32(lagging), "history", topics["history"].ID, 0, true)
	if err != nil || end != 800 {
		t.Fatalf("the caught-up replica holds up to offset %d: %v", end, err)
	}
	for offset, crc := range served {
		if held[offset] != crc {
			t.Fatalf("batch at offset %d: crc %08x on the leader, %08x on the caught-up replica", offset, crc, held[offset])
		}
	}
}

func TestRetentionBytesDropsOldSegments(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1, ExtraFlags: []string{"--retention-check-interval", "500ms"}})
	segment, retain := "1048576", "1048576"
	c.CreateTopic("metrics", 1, 1, map[string]*string{"segment.bytes": &segment, "retention.bytes": &retain})
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("metrics"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	value := []byte(strings.Repeat("m", 1024))
	for i := 0; i < 4000; i++ { // about 4 MiB: four segments
		cl.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	adm := c.Admin()
	// A retention pass may run while the records are still arriving and drop
	// only the first segment; a later pass must bring the partition within
	// its budget: the active segment and at most 1 MiB before it.
	var start int64
	waitFor(t, 20*time.Second, "retention to bring the partition within 1 MiB plus its active segment", func() bool {
		starts, err := adm.ListStartOffsets(ctx, "metrics")
		if err != nil {
			return false
		}
		o, _ := starts.Lookup("metrics", 0)
		start = o.Offset
		size, _ := c.Metric(0, "raftka_partition_size_bytes", `topic="metrics"`)
		return start > 0 && size <= 2*1048576+64*1024
	})
	got := consumeAll(t, c, "metrics", 4000-int(start))
	if got[0].Offset != start {
		t.Fatalf("consumption starts at %d, log start is %d", got[0].Offset, start)
	}
}

// TestRetentionMsEmptiesAQuietTopic: records older than retention.ms go
// even when they never filled a segment, from every replica's disk, and
// the partition carries on at the same offsets.
func TestRetentionMsEmptiesAQuietTopic(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, ExtraFlags: []string{"--retention-check-interval", "300ms"}})
	retention := "2000"
	c.CreateTopic("quiet", 1, 3, map[string]*string{"retention.ms": &retention})
	produceN(t, c, "quiet", 10)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitFor(t, 30*time.Second, "retention to delete every record", func() bool {
		starts, err := c.Admin().ListStartOffsets(ctx, "quiet")
		if err != nil {
			return false
		}
		o, _ := starts.Lookup("quiet", 0)
		return o.Offset == 10
	})
	for i := range c.Brokers {
		waitFor(t, 10*time.Second, fmt.Sprintf("broker %d to free the partition's disk", i), func() bool {
			size, ok := c.Metric(i, "raftka_partition_size_bytes", `topic="quiet"`)
			return ok && size == 0
		})
	}
	r := &kgo.Record{Topic: "quiet", Value: []byte("after")}
	if err := c.Client(kgo.RequiredAcks(kgo.AllISRAcks())).ProduceSync(ctx, r).FirstErr(); err != nil || r.Offset != 10 {
		t.Fatalf("produce after retention: offset %d, %v", r.Offset, err)
	}
	if got := consumeAll(t, c, "quiet", 1); got[0].Offset != 10 || string(got[0].Value) != "after" {
		t.Fatalf("read %q at %d", got[0].Value, got[0].Offset)
	}
}

func TestFullDiskRefusesProduceAndKeepsData(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	c.CreateTopic("precious", 1, 1, nil)
	produceN(t, c, "precious", 10)
	// Restart the broker believing its disk is full: it must refuse writes
	// with KAFKA_STORAGE_ERROR and still serve what it has.
	c.Stop(0)
	c.Brokers[0].Flags = []string{"--min-free-bytes", "1152921504606846976"}
	c.Restart(0)
	c.WaitReady(0)
	p := produceRaw(t, c.Client(), "precious", 0, -1, batch(-1, 0, 0, "one too many"))
	if p.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("produce on a full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(p.ErrorCode))
	}
	if got := consumeAll(t, c, "precious", 10); len(got) != 10 {
		t.Fatalf("read %d records, want 10", len(got))
	}
}

func TestHealthEndpoints(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("health", 3, 3, nil)
	produceN(t, c, "health", 30)
	// A batch above --raft-log-copy-bytes: its Raft log saves fsync their
	// frames rather than copy them, so that stage is timed too.
	c.CreateTopic("health-large", 1, 3, nil)
	large := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer large.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := large.ProduceSync(ctx, &kgo.Record{Topic: "health-large", Value: make([]byte, 100<<10)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for i := range c.Brokers {
		if code, body := c.Get(i, "/readyz"); code != http.StatusOK {
			t.Fatalf("broker %d readyz: %d %s", i, code, body)
		}
		if code, body := c.Get(i, "/safe-to-restart"); code != http.StatusOK {
			t.Fatalf("broker %d safe-to-restart with all up: %d %s", i, code, body)
		}
	}
	var sum float64
	for i := range c.Brokers {
		for _, p := range []string{`partition="0"`, `partition="1"`, `partition="2"`} {
			if v, ok := c.Metric(i, "raftka_partition_high_watermark", `topic="health"`, p); ok {
				sum += v
			}
		}
	}
	if sum != 90 { // 30 records, every broker hosts every partition
		t.Fatalf("high watermarks over all replicas sum to %v, want 90", sum)
	}
	if leaders, _ := c.Metric(0, "raftka_leader_partitions"); leaders < 0 || leaders > 3 {
		t.Fatalf("broker 0 leads %v partitions", leaders)
	}
	var produces float64
	for i := range c.Brokers {
		n, _ := c.Metric(i, "raftka_request_duration_seconds_count", `api="Produce"`)
		produces += n
	}
	if produces < 1 {
		t.Fatal("no produce latency metric on any broker")
	}
	// Every stage of a produce is timed: the leaders' request stages as
	// often as they answered produce requests, the storage stages on
	// every replica.
	var answered float64
	for i := range c.Brokers {
		n, _ := c.Metric(i, "raftka_produce_requests_total")
		answered += n
	}
	for _, stage := range []string{"read", "propose", "commit", "respond", "log_frames_sync", "log_record_sync", "apply"} {
		var count float64
		for i := range c.Brokers {
			n, _ := c.Metric(i, "raftka_produce_stage_seconds_count", fmt.Sprintf("stage=%q", stage))
			count += n
		}
		if count < 1 || (stage == "read" || stage == "propose" || stage == "commit" || stage == "respond") && count != answered {
			t.Errorf("stage %s timed %v times; %v produce requests answered", stage, count, answered)
		}
	}
	for i := range c.Brokers {
		files, _ := c.Metric(i, "raftka_raft_log_files")
		bytes, _ := c.Metric(i, "raftka_raft_log_bytes")
		syncs, _ := c.Metric(i, "raftka_raft_log_syncs_total")
		if files < 1 || bytes <= 0 || syncs < 1 {
			t.Fatalf("broker %d Raft log: %v files, %v bytes, %v syncs", i, files, bytes, syncs)
		}
	}
	// Killing the metadata group's leader, once it leads a partition too,
	// starts elections on the other two brokers; they stay ready through
	// them, as a rolling restart needs (only the restarted broker's pod
	// may be unready at a time).
	var killed int
	var led int32
	waitFor(t, 30*time.Second, "the metadata group's leader to lead a partition", func() bool {
		md, err := c.Admin().Metadata(ctx, "health")
		if err != nil {
			return false
		}
		killed = int(md.Controller)
		for p, pd := range md.Topics["health"].Partitions {
			if pd.Leader == md.Controller {
				led = p
				return true
			}
		}
		return false
	})
	var others []int
	for i := range c.Brokers {
		if i != killed {
			others = append(others, i)
		}
	}
	c.Kill(killed)
	deadline := time.Now().Add(15 * time.Second)
	for start, reelected := time.Now(), false; time.Since(start) < 3*time.Second || !reelected; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("health/%d still led by the killed broker %d", led, killed)
		}
		for _, i := range others {
			if code, body := c.Get(i, "/readyz"); code != http.StatusOK {
				t.Fatalf("broker %d unready while another broker's partitions elect a leader: %d %s", i, code, body)
			}
		}
		reelected = reelected || c.LeaderOf("health", led) != killed
	}
	// Each broker notices the loss on its own; ask the one inspected.
	inspected := others[0]
	waitFor(t, 10*time.Second, "the inspected broker to notice a broker is gone", func() bool {
		code, _ := c.Get(inspected, "/safe-to-restart")
		return code == http.StatusServiceUnavailable
	})
	_, body := c.Get(inspected, "/safe-to-restart")
	if !strings.Contains(body, "health-") || !strings.Contains(body, "metadata") {
		t.Fatalf("safe-to-restart does not name what would lose quorum: %s", body)
	}
	// Without a quorum the partitions stay leaderless, which an election
	// does not explain: the last broker is unready and says why.
	c.Kill(others[1])
	waitFor(t, 15*time.Second, "the last broker to report leaderless partitions", func() bool {
		code, body := c.Get(inspected, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "hosted partitions have no leader")
	})
}
