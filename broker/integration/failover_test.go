package integration

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

func TestLeaderKillLosesNothingAcknowledged(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	idle := idleTopic(t, c, "idle", 24)
	min2 := "2"
	c.CreateTopic("ledger", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	produceThroughKills(t, c, "ledger", franzGoProducer(c), func(*brokertest.Ledger) {
		time.Sleep(2 * time.Second)
		killPartitionLeaders(t, c, "ledger")
	})
	idle()
}

// killPartitionLeaders SIGKILLs the leader of partition 0 of topic, restarts
// it 3 s later, then does the same to the leader of partition 1.
func killPartitionLeaders(t *testing.T, c *brokertest.Cluster, topic string) {
	for round, p := range []int32{0, 1} {
		if round > 0 {
			time.Sleep(2 * time.Second)
		}
		victim := c.LeaderOf(topic, p)
		t.Logf("round %d: SIGKILL broker %d, leader of partition %d", round, victim, p)
		c.Kill(victim)
		time.Sleep(3 * time.Second)
		c.Restart(victim)
		c.WaitReady(victim)
	}
}

// produceFunc writes sequence-numbered records to the partitions of topic
// in turn until stop closes, records each outcome in acks, and returns how
// many records it sent.
type produceFunc func(acks *brokertest.Ledger, topic string, partitions int32, stop <-chan struct{}) (int, error)

// franzGoProducer is an acks=all franz-go producer with unlimited retries.
func franzGoProducer(c *brokertest.Cluster, opts ...kgo.Opt) produceFunc {
	producer := c.Client(append([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5 * time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond })}, opts...)...)
	return func(acks *brokertest.Ledger, topic string, partitions int32, stop <-chan struct{}) (int, error) {
		return acks.ProduceUntil(producer, topic, partitions, stop)
	}
}

// produceThroughKills writes the 3 partitions of topic with produce, runs
// kill once the first record is acknowledged, then requires every record
// acknowledged and read back once, in order; then all brokers die at once
// and come back, and the same records must be there.
func produceThroughKills(t *testing.T, c *brokertest.Cluster, topic string, produce produceFunc, kill func(acks *brokertest.Ledger)) *brokertest.Ledger {
	t.Helper()
	acks := brokertest.NewLedger()
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		sent, err := produce(acks, topic, 3, stop)
		if err != nil {
			t.Errorf("produce: %v", err)
		}
		done <- sent
	}()
	waitFor(t, time.Minute, "the producer's first acknowledgement", func() bool { return acks.Acked() > 0 })
	kill(acks)
	time.Sleep(time.Second)
	close(stop)
	sent := <-done
	if acks.Acked() != sent {
		t.Fatalf("%d of %d records acknowledged: with unlimited retries every one should be", acks.Acked(), sent)
	}
	acks.VerifyExactlyOnce(t, topic, c.Client)

	c.CrashAll()
	acks.VerifyExactlyOnce(t, topic, c.Client)
	return acks
}

func TestLostQuorumRefusesAcksAllThenRecovers(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	min2 := "2"
	c.CreateTopic("guarded", 1, 3, map[string]*string{"min.insync.replicas": &min2})
	before := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := before.ProduceSync(ctx, &kgo.Record{Topic: "guarded", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	survivor := c.LeaderOf("guarded", 0)
	details, err := c.Admin().ListTopics(ctx, "guarded")
	if err != nil {
		t.Fatal(err)
	}
	direct := brokerClient(ctx, t, c)
	committed, _, err := fetchBatches(ctx, direct, int32(survivor), "guarded", details["guarded"].ID, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Brokers {
		if i != survivor {
			c.Kill(i)
		}
	}
	time.Sleep(2 * time.Second) // liveness notices within 1.5 s
	// The broker answers the precise error...
	raw := produceRaw(t, c.Client(), "guarded", 0, -1, batch(-1, 0, 0, "refused"))
	if raw.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("produce with 1 of 3 replicas: error %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(raw.ErrorCode))
	}
	// ...and a client that keeps retrying is never told its record is stored.
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(5*time.Second))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "guarded", Value: []byte("refused")}).FirstErr(); err == nil {
		t.Fatal("a record was acknowledged with 1 of 3 replicas")
	}
	// The last leader names no leader, so that clients ask elsewhere, but
	// it stands in for reads: a client that reads from it gets what was
	// committed.
	leaders, _ := metadataFrom(t, direct, survivor, "guarded")
	if l := leaders[0]; l.id != -1 || l.code != kerr.LeaderNotAvailable.Code {
		t.Errorf("the last leader names broker %d with %v for the partition without a quorum, want none with LEADER_NOT_AVAILABLE", l.id, kerr.ErrorForCode(l.code))
	}
	served, _, err := fetchBatches(ctx, direct, int32(survivor), "guarded", details["guarded"].ID, 0, false)
	if err != nil || !maps.Equal(served, committed) {
		t.Fatalf("the last leader served %v (%v) without a quorum, want the committed batches %v", served, err, committed)
	}
	for i := range c.Brokers {
		c.Restart(i)
	}
	for i := range c.Brokers {
		c.WaitReady(i)
	}
	after := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := after.ProduceSync(ctx, &kgo.Record{Topic: "guarded", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after recovery: %v", err)
	}
	got := consumeAll(t, c, "guarded", 2)
	if len(got) != 2 || string(got[0].Value) != "before" || string(got[1].Value) != "after" {
		var vals []string
		for _, r := range got {
			vals = append(vals, string(r.Value))
		}
		t.Fatalf("stored %v, want [before after]", vals)
	}
}

// TestStalledFollowerIsNotInSync: a follower whose process is stalled
// (SIGSTOP: its ports still accept connections) falls out of sync after
// --replica-lag-max, so acks=all on a topic with min.insync.replicas=3 is
// refused instead of acknowledged with two copies; once it runs again and
// catches up, the same produce succeeds and the record is on all three.
func TestStalledFollowerIsNotInSync(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, ExtraFlags: []string{"--replica-lag-max", "1s"}})
	idle := idleTopic(t, c, "idle", 24)
	all3 := "3"
	c.CreateTopic("three-copies", 1, 3, map[string]*string{"min.insync.replicas": &all3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "three-copies", Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	details, err := c.Admin().ListTopics(ctx, "three-copies")
	if err != nil {
		t.Fatal(err)
	}
	// Leadership first settles on the preferred replica (the brokers move
	// it there), so that it stays where the requests below go.
	leader := int(details["three-copies"].Partitions[0].Replicas[0])
	waitFor(t, 15*time.Second, "the preferred replica to lead", func() bool { return c.LeaderOf("three-copies", 0) == leader })
	stalled := (leader + 1) % 3
	// Requests go to the leader only: a client's requests to the stalled
	// broker would wait for their timeouts.
	toLeader := c.Client().Broker(leader)
	produce := func() int16 {
		req := produceRequest("three-copies", details["three-copies"].ID, 0, -1, batch(-1, 0, 0, "while stalled"))
		req.TimeoutMillis = 5000
		resp, err := toLeader.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	// The client learns the brokers' addresses now: asked after the pause,
	// its bootstrap could wait on the stalled broker.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("three-copies")
	mreq.Topics = append(mreq.Topics, mt)
	if _, err := toLeader.Request(ctx, mreq); err != nil {
		t.Fatal(err)
	}
	c.Pause(stalled)
	t0 := time.Now()
	waitFor(t, 15*time.Second, "the stalled follower to fall out of sync", func() bool {
		return produce() == kerr.NotEnoughReplicas.Code
	})
	mresp, err := toLeader.Request(ctx, mreq)
	if err != nil {
		t.Fatal(err)
	}
	if isr := mresp.(*kmsg.MetadataResponse).Topics[0].Partitions[0].ISR; len(isr) != 2 || slices.Contains(isr, int32(stalled)) {
		t.Fatalf("the leader reports ISR %v with broker %d stalled", isr, stalled)
	}
	t.Logf("stalled out after %v", time.Since(t0))
	c.Resume(stalled)
	waitFor(t, 15*time.Second, "the follower to catch up and acks=all to succeed", func() bool {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "three-copies", Value: []byte("after")}).FirstErr() == nil
	})
	t.Logf("caught up after %v", time.Since(t0))
	// Every replica holds what was acknowledged.
	hw, _ := c.Metric(leader, "raftka_partition_high_watermark", `topic="three-copies"`)
	for i := range c.Brokers {
		waitFor(t, 10*time.Second, fmt.Sprintf("broker %d to hold every record", i), func() bool {
			got, _ := c.Metric(i, "raftka_partition_high_watermark", `topic="three-copies"`)
			return got == hw
		})
	}
	idle()
}

// TestRaftLogSurvivesKillsDuringRolls runs the brokers' Raft log store with
// 64 KiB files and partitions that snapshot and compact their Raft logs
// every 64 KiB, so that the store starts new files, copies entries forward
// and deletes files many times a second, and SIGKILLs a broker every few
// seconds while an acks=all producer writes: whatever was acknowledged is
// read back once and in order, also after all brokers die at once, and old
// files still go. Emptied files are written over (spares), so the replays
// after the kills also read files whose tails are records of their earlier
// lives.
func TestRaftLogSurvivesKillsDuringRolls(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, ExtraFlags: []string{"--raft-log-file-bytes", "65536", "--raft-log-retain-bytes", "65536"}})
	min2 := "2"
	c.CreateTopic("rolls", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	acks := produceThroughKills(t, c, "rolls", franzGoProducer(c), func(*brokertest.Ledger) {
		for round := 0; round < 6; round++ {
			time.Sleep(1500 * time.Millisecond)
			victim := round % 3
			t.Logf("round %d: SIGKILL broker %d", round, victim)
			c.Kill(victim)
			time.Sleep(time.Second)
			c.Restart(victim)
			c.WaitReady(victim)
		}
	})
	for i := range c.Brokers {
		// 9 to 14 files in the runs so far; without deletion, one per 64 KiB
		// written: about 50.
		files, ok := c.Metric(i, "raftka_raft_log_files")
		spares, _ := c.Metric(i, "raftka_raft_log_spare_files")
		reused, _ := c.Metric(i, "raftka_raft_log_files_reused_total")
		t.Logf("broker %d: %v Raft log files and %v spares; %v files written over since its last start", i, files, spares, reused)
		if !ok || files > 30 || spares > 2 {
			t.Errorf("broker %d keeps %v Raft log files of 64 KiB and %v spares", i, files, spares)
		}
	}
	t.Logf("%d records acknowledged", acks.Acked())
}

// TestRaftLogStaysWithinItsBudget writes 48 MB over 24 partitions, 2 MB
// each: no partition applies a snapshot interval (4 MiB), so none would
// compact its Raft log on its own, and each broker's Raft log would hold
// all 48 MB. With --raft-log-max-bytes 8 MiB the replicas snapshot early
// and the store comes back within twice the bound once they have (followers
// catching up from snapshots meanwhile), and every record is still read
// back once.
func TestRaftLogStaysWithinItsBudget(t *testing.T) {
	const budget = 8 << 20
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, ExtraFlags: []string{"--raft-log-file-bytes", "524288", "--raft-log-max-bytes", fmt.Sprint(budget)}})
	c.CreateTopic("budget", 24, 3, nil)
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("budget"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(32<<10), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const records = 48000
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < records; i++ {
		value := make([]byte, 1000)
		for j := range value {
			value[j] = byte(i*31 + j*7 + j/11) // incompressible enough, and distinct per record
		}
		copy(value, fmt.Sprintf("%08d", i))
		wg.Add(1)
		producer.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d records not acknowledged", n)
	}
	// The store shrinks as replicas finish their snapshots, which lag
	// behind a burst of writes; it is not held under the bound while one
	// is written.
	for i := range c.Brokers {
		atEnd, _ := c.Metric(i, "raftka_raft_log_bytes")
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d's Raft log to come within the budget and two files", i), func() bool {
			bytes, _ := c.Metric(i, "raftka_raft_log_bytes")
			return bytes <= budget+2*512<<10
		})
		bytes, _ := c.Metric(i, "raftka_raft_log_bytes")
		snapshots, _ := c.Metric(i, "raftka_raft_log_budget_snapshots_total")
		t.Logf("broker %d: %.1f MiB of Raft log when the producer was done, then %.1f MiB; %v snapshots for the budget", i, atEnd/(1<<20), bytes/(1<<20), snapshots)
	}
	seen := map[string]bool{}
	for _, r := range consumeAll(t, c, "budget", records) {
		seen[string(r.Value[:8])] = true
	}
	if len(seen) != records {
		t.Fatalf("read back %d distinct records of %d", len(seen), records)
	}
}

// TestCrashOfEveryBrokerWhileProducing SIGKILLs all three brokers at once,
// three times at random moments, while an acks=all producer has records
// in flight: each save fsyncs a partition's frames and the Raft log's
// record side by side, and a save cut short must never have been
// acknowledged. Every acknowledged record is read back once, in order.
// (A SIGKILL leaves the page cache whole, so a frame torn under a durable
// record, which only a power loss makes, is the raftlog unit test's part:
// TestRecordNamingTornFramesIsNeverWritten.)
func TestCrashOfEveryBrokerWhileProducing(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	min2 := "2"
	c.CreateTopic("crashes", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	produceThroughKills(t, c, "crashes", franzGoProducer(c), func(acks *brokertest.Ledger) {
		for round := 0; round < 3; round++ {
			time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
			before := acks.Acked()
			t.Logf("round %d: SIGKILL every broker with %d records acknowledged", round, before)
			c.CrashAll()
			waitFor(t, time.Minute, "acknowledgements after the crash", func() bool { return acks.Acked() > before })
		}
	})
}

// TestMachineCrashLosingUnsyncedFramesLosesNothing attacks the copies a
// small Raft log save keeps of its partition frames instead of fsyncing
// them (raftlog.SetCopyBytes): a crash of the machine, not only of the
// process, loses what was not fsynced. Every broker is SIGKILLed, then
// the tail of each partition replica's frame files is cut, as lost page
// cache would leave it (a producer waiting for each acknowledgement makes
// only small saves, so no fsync covered those frames). Every acknowledged
// record must come back whole, read from each of several leaders.
func TestMachineCrashLosingUnsyncedFramesLosesNothing(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	min2 := "2"
	c.CreateTopic("powerloss", 1, 3, map[string]*string{"min.insync.replicas": &min2})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	acks := brokertest.NewLedger()
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 300 {
		res := producer.ProduceSync(ctx, &kgo.Record{Topic: "powerloss", Value: []byte(strconv.Itoa(i))})
		r, err := res.First()
		acks.Record(r, err)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	producer.Close()

	for i := range c.Brokers {
		c.Kill(i)
	}
	for i, b := range c.Brokers {
		if !c.WaitExit(i, 10*time.Second) {
			t.Fatalf("broker %d still runs after SIGKILL", i)
		}
		cut := cutFrameTails(t, b.DataDir, 4000)
		t.Logf("broker %d: cut %d bytes off its frame files", i, cut)
	}
	for i := range c.Brokers {
		c.Restart(i)
	}
	for i := range c.Brokers {
		c.WaitReady(i)
	}
	repaired := 0
	for _, b := range c.Brokers {
		log, err := os.ReadFile(b.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		repaired += strings.Count(string(log), "raft log replay wrote partition frames a crash tore again")
	}
	if repaired == 0 {
		t.Fatal("no broker wrote frames again from the Raft log's copies: the cut reached nothing the test means to check")
	}
	acks.VerifyExactlyOnce(t, "powerloss", c.Client)
	for round := range 2 {
		leader := c.LeaderOf("powerloss", 0)
		t.Logf("round %d: SIGKILL leader %d, read everything from the next", round, leader)
		c.Kill(leader)
		waitFor(t, time.Minute, "another leader", func() bool { return c.LeaderOf("powerloss", 0) != leader })
		acks.VerifyExactlyOnce(t, "powerloss", c.Client)
		c.Restart(leader)
		c.WaitReady(leader)
	}
}

// cutFrameTails cuts up to n bytes off the end of the newest frame file
// of each partition replica under dataDir, and returns how many it cut.
func cutFrameTails(t *testing.T, dataDir string, n int64) int64 {
	t.Helper()
	var cut int64
	err := filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "frames" {
			return err
		}
		files, err := filepath.Glob(filepath.Join(path, "*.frames"))
		if err != nil || len(files) == 0 {
			return err
		}
		sort.Strings(files)
		newest := files[len(files)-1]
		st, err := os.Stat(newest)
		if err != nil {
			return err
		}
		size := max(st.Size()-n, 0)
		cut += st.Size() - size
		return os.Truncate(newest, size)
	})
	if err != nil {
		t.Fatal(err)
	}
	return cut
}
