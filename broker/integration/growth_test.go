package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/broker/growth"
)

// consumerGroup starts a group of two consumers of topic that report
// each record they process to check, until ctx ends; wait returns once
// they stopped.
type consumerGroup func(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder) (wait func())

// followGrowth: clients learn of new partitions when their metadata ages;
// the consumers must see them to read them at all, and the producer
// too, for the run with ordered growth off to reorder.
var followGrowth = []kgo.Opt{kgo.MetadataMaxAge(2 * time.Second), kgo.MetadataMinAge(250 * time.Millisecond)}

// franzGroup: franz-go consumers that process slower than the producer
// writes, commit after processing, reset to latest and rebalance only
// between polls.
func franzGroup(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder) func() {
	return franzConsumers(ctx, t, c, topic, check, kgo.NewOffset().AtEnd(), 4*time.Millisecond, 0)
}

// franzGroupCommittingLate: a slower group, from the start of the log,
// that commits nothing for its first 15 s, as a consumer working through
// its first large poll: the group has not committed when the topic first
// grows, and is seconds behind.
func franzGroupCommittingLate(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder) func() {
	return franzConsumers(ctx, t, c, topic, check, kgo.NewOffset().AtStart(), 8*time.Millisecond, 15*time.Second)
}

// franzConsumers runs two consumers of group groupOf(topic), taking perRecord
// to process a record and marking what they processed for commit once
// firstCommit has passed; opts are added to theirs.
func franzConsumers(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder, reset kgo.Offset, perRecord, firstCommit time.Duration, opts ...kgo.Opt) func() {
	var consumers sync.WaitGroup
	commitFrom := time.Now().Add(firstCommit)
	for i := range 2 {
		cl := c.Client(append(append(slices.Clone(followGrowth), kgo.ConsumerGroup(groupOf(topic)), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(reset), kgo.AutoCommitMarks(), kgo.BlockRebalanceOnPoll(),
			kgo.AutoCommitInterval(500*time.Millisecond)), opts...)...)
		consumers.Go(func() {
			var unmarked []*kgo.Record
			for ctx.Err() == nil {
				// A poll ends within a second, so that what was processed
				// is marked once firstCommit passed, also at a hold.
				pollCtx, cancel := context.WithTimeout(ctx, time.Second)
				fetches := cl.PollRecords(pollCtx, 20)
				cancel()
				fetches.EachRecord(func(r *kgo.Record) {
					seq, _ := strconv.Atoi(string(r.Value))
					check.Process(string(r.Key), seq, r.Partition)
					time.Sleep(perRecord) // 4 ms: about 250 records/s each, so the group lags
					unmarked = append(unmarked, r)
				})
				if time.Now().After(commitFrom) {
					cl.MarkCommitRecords(unmarked...)
					unmarked = unmarked[:0]
				}
				cl.AllowRebalance()
			}
			// Where it stood, for a run that stalled (the test's log shows
			// it only then, or with -v).
			t.Logf("consumer %d of %s: committed %v; marked, not committed %v; unmarked %d", i, groupOf(topic),
				cl.CommittedOffsets()[topic], cl.MarkedOffsets()[topic], len(unmarked))
		})
	}
	return consumers.Wait
}

// keyedProducer writes under 64 keys, a per-key sequence in each record,
// at about 600 records/s until stop closes, and reports each record
// acknowledged to check; done closes once it flushed and stopped.
type keyedProducer func(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder, stop <-chan struct{}) (done <-chan struct{})

// franzProducer: franz-go with its default partitioner (murmur2).
func franzProducer(opts ...kgo.Opt) keyedProducer {
	return func(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder, stop <-chan struct{}) <-chan struct{} {
		producer := c.Client(append(slices.Clone(followGrowth), opts...)...)
		done := make(chan struct{})
		go func() {
			defer close(done)
			records := newKeyedRecords()
			defer records.close()
			for {
				key, seq, stopped := records.next(stop)
				if stopped {
					_ = producer.Flush(ctx) // what did not flush was not acknowledged, and is not checked
					return
				}
				producer.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(strconv.Itoa(seq))}, func(r *kgo.Record, err error) {
					if err == nil {
						check.Ack(key, seq)
					}
				})
			}
		}()
		return done
	}
}

// keyedRecords paces the scenarios' records: 600 a second over 64 keys,
// each key's values numbering its records from 0.
type keyedRecords struct {
	seqs map[string]int
	i    int
	tick *time.Ticker
}

func newKeyedRecords() *keyedRecords {
	return &keyedRecords{seqs: map[string]int{}, tick: time.NewTicker(time.Second / 600)}
}

// next waits for the pace, or for stop (then at once, stopped), and gives
// the next key and its number.
func (k *keyedRecords) next(stop <-chan struct{}) (key string, seq int, stopped bool) {
	select {
	case <-stop:
		stopped = true
	case <-k.tick.C:
	}
	key = "key-" + strconv.Itoa(k.i%64)
	k.i++
	seq = k.seqs[key]
	k.seqs[key]++
	return key, seq, stopped
}

func (k *keyedRecords) close() { k.tick.Stop() }

// librdkafkaProducer: librdkafka through Debian's python3-confluent-kafka
// (testdata/confluent-kafka/growth_producer.py), with its default
// partitioner, consistent_random (CRC32). Closing its stdin stops it.
func librdkafkaProducer(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder, stop <-chan struct{}) <-chan struct{} {
	if err := exec.Command(debianPython, "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatal("confluent-kafka is not installed: apt-get install python3-confluent-kafka (hack/test-deps.sh does)")
	}
	cmd := exec.CommandContext(ctx, debianPython, "growth_producer.py")
	cmd.Dir = filepath.Join("testdata", "confluent-kafka")
	cmd.Env = append(os.Environ(), "BROKERS="+strings.Join(c.AllAddrs(), ","), "TOPIC="+topic)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { <-stop; in.Close() }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			var key string
			var seq int
			if _, err := fmt.Sscan(lines.Text(), &key, &seq); err == nil {
				check.Ack(key, seq)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("the librdkafka producer: %v: %s", err, stderr.String())
		}
	}()
	return done
}

// scenario is one run of the keyed-growth scenario on a fresh topic.
type scenario struct {
	topic   string
	configs map[string]*string
	group   consumerGroup
	// producer is franzProducer() when nil.
	producer keyedProducer
	// afterGrowth, if set, runs after each growth.
	afterGrowth func(ctx context.Context)
	// check is a fresh checker when nil.
	check *brokertest.KeyOrder
}

// runKeyedGrowth runs the scenario: a keyed producer over 64 keys
// at about 600 records/s throughout, a group started by s.group, and the
// topic grown 4 -> 6 and then 6 -> 9 while the group lags.
func runKeyedGrowth(t *testing.T, c *brokertest.Cluster, s scenario) brokertest.KeyOrderReport {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	topic := s.topic
	c.CreateTopic(topic, 4, 3, s.configs)
	check := s.check
	if check == nil {
		check = brokertest.NewKeyOrder(4)
	}
	defer s.group(ctx, t, c, topic, check)()
	defer cancel()
	time.Sleep(3 * time.Second) // the group joins and resets to the end, before anything is produced

	if s.producer == nil {
		s.producer = franzProducer()
	}
	stop := make(chan struct{})
	produced := s.producer(ctx, t, c, topic, check, stop)
	adm := c.Admin()
	for _, grow := range []int{2, 3} { // 4 -> 6, then 6 -> 9
		time.Sleep(5 * time.Second)
		began := time.Now()
		if _, err := adm.CreatePartitions(ctx, grow, topic); err != nil {
			t.Fatalf("growing %s by %d: %v", topic, grow, err)
		}
		t.Logf("%s grown by %d in %v", topic, grow, time.Since(began))
		if s.afterGrowth != nil {
			s.afterGrowth(ctx)
		}
	}
	time.Sleep(5 * time.Second)
	close(stop)
	<-produced
	// Until every acknowledged record is processed, or nothing more is
	// for long enough that the rest was skipped.
	stopped, progressed, left := time.Now(), time.Now(), check.Missing()
	for ctx.Err() == nil && left > 0 && time.Since(progressed) < 20*time.Second {
		time.Sleep(250 * time.Millisecond)
		if now := check.Missing(); now < left {
			progressed, left = time.Now(), now
		}
	}
	t.Logf("%s: %d records left unprocessed %v after the producer stopped", topic, left, time.Since(stopped))
	if left > 0 {
		for i := range c.Brokers {
			if c.Running(i) {
				_, growths := c.Get(i, "/growth?topic="+topic)
				t.Logf("%s: the growths, as broker %d has them: %s", topic, i, growths)
			}
		}
		logGroupProgress(t, c, topic)
	}
	return check.Report()
}

// TestOrderedGrowthKeepsEachKeysOrder: the guarantee of ordered growth
// (docs/design/ordered-growth.md) with franz-go's defaults for keys, and
// the same scenario with ordered growth off, which must reorder or skip:
// the test can fail.
func TestOrderedGrowthKeepsEachKeysOrder(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	quick := map[string]*string{"raftka.growth.quiet.ms": kmsg.StringPtr("2000")}
	on := runKeyedGrowth(t, c, scenario{topic: "ordered", configs: quick, group: franzGroup})
	t.Logf("ordered growth: %d records acknowledged, %d of them from new partitions, %d reordered, %d never processed", on.Acked, on.Grown, on.Reordered, on.Missing)
	if on.Grown == 0 {
		t.Error("no record was processed from a partition the growths added: the producer never placed keys by the new count")
	}
	if on.Reordered > 0 || on.Missing > 0 {
		t.Errorf("ordered growth: %d records reordered (first: %s), %d acknowledged records never processed", on.Reordered, on.FirstBad, on.Missing)
	}
	for i := range c.Brokers {
		if n, ok := c.Metric(i, "raftka_growth_forced_lifts_total", `topic="ordered"`); ok && n > 0 {
			t.Errorf("broker %d lifted %v growths at their bound: the group should have drained them", i, n)
		}
	}

	off := runKeyedGrowth(t, c, scenario{topic: "unordered", configs: map[string]*string{"raftka.growth.ordered": kmsg.StringPtr("false")}, group: franzGroup})
	t.Logf("ordered growth off: %d records acknowledged, %d reordered (first: %s), %d never processed", off.Acked, off.Reordered, off.FirstBad, off.Missing)
	if off.Reordered == 0 && off.Missing == 0 {
		t.Error("with ordered growth off, the scenario neither reordered nor skipped a record: it cannot tell the guarantee from its absence")
	}
}

// TestOrderedGrowthCountsAGroupBeforeItsFirstCommit: a group whose
// members subscribed but that has not committed yet when the topic grows
// (a consumer that just started on a backlog) is counted from its
// coordinator's note (Growth.Joined), so the growth waits for it: no key
// is reordered and nothing is skipped. Counted by commits alone, the
// growth lifted before the group's first commit and the group read keys
// out of order.
func TestOrderedGrowthCountsAGroupBeforeItsFirstCommit(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	quick := map[string]*string{"raftka.growth.quiet.ms": kmsg.StringPtr("2000")}
	run := runKeyedGrowth(t, c, scenario{topic: "first-commit", configs: quick, group: franzGroupCommittingLate})
	t.Logf("a group committing late: %d records acknowledged, %d of them from new partitions, %d reordered, %d never processed", run.Acked, run.Grown, run.Reordered, run.Missing)
	if run.Grown == 0 {
		t.Error("no record was processed from a partition the growths added")
	}
	if run.Reordered > 0 || run.Missing > 0 {
		t.Errorf("%d records reordered (first: %s), %d acknowledged records never processed", run.Reordered, run.FirstBad, run.Missing)
	}
}

// TestOrderedGrowthSurvivesACrashedMetadataLeader: the metadata leader is
// SIGKILLed while each growth holds, so the holds, the classification and
// the lift go on from another broker, and the first comes back; the
// checker still passes.
func TestOrderedGrowthSurvivesACrashedMetadataLeader(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	quick := map[string]*string{"raftka.growth.quiet.ms": kmsg.StringPtr("2000")}
	killed := -1
	crash := func(ctx context.Context) {
		if killed >= 0 {
			c.Restart(killed)
		}
		md, err := c.Admin().BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		killed = int(md.Controller)
		c.Kill(killed)
		t.Logf("metadata leader %d SIGKILLed", killed)
	}
	// The consumers' own account goes to the test's log, should a stall
	// come back. One did, in 3 of 52 runs beside two busy loops (and once
	// in CI), until the next coordinator loaded the group's membership
	// and read its offsets only once caught up (groups/load.go,
	// server/coordinator.go).
	logged := func(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder) func() {
		return franzConsumers(ctx, t, c, topic, check, kgo.NewOffset().AtEnd(), 4*time.Millisecond, 0, kgo.WithLogger(newConsumerLog(t)))
	}
	run := runKeyedGrowth(t, c, scenario{topic: "crashed", configs: quick, group: logged, afterGrowth: crash})
	t.Logf("ordered growth with crashes: %d records acknowledged, %d of them from new partitions, %d reordered, %d never processed", run.Acked, run.Grown, run.Reordered, run.Missing)
	if run.Grown == 0 || run.Reordered > 0 || run.Missing > 0 {
		t.Errorf("with the metadata leader SIGKILLed during each growth: %d reordered (first: %s), %d never processed, %d from new partitions", run.Reordered, run.FirstBad, run.Missing, run.Grown)
	}
}

// TestOrderedGrowthLiftsAtItsBound: a group that committed once and
// never again holds a growth only until raftka.growth.max.hold.ms, and
// the lift is counted as forced.
func TestOrderedGrowthLiftsAtItsBound(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.CreateTopic("bounded", 2, 3, map[string]*string{"raftka.growth.max.hold.ms": kmsg.StringPtr("3000"), "raftka.growth.quiet.ms": kmsg.StringPtr("0")})
	cl := c.Client()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bounded", Key: []byte(strconv.Itoa(i)), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := c.Admin()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "bounded", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "stuck", offsets); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreatePartitions(ctx, 1, "bounded"); err != nil {
		t.Fatal(err)
	}
	grown := time.Now()
	status := func() growth.Status {
		_, body := c.Get(0, "/growth?topic=bounded")
		var out []growth.Status
		if err := json.Unmarshal([]byte(body), &out); err != nil || len(out) != 1 {
			t.Fatalf("GET /growth: %q: %v", body, err)
		}
		return out[0]
	}
	if st := status(); len(st.Growths) != 1 || !slices.Equal(st.Growths[0].Draining, []string{"stuck"}) || st.Growths[0].To != 3 {
		t.Errorf("growth while held: %+v, want one growth to 3 that group stuck drains", st)
	}
	// The new partition is held at 0 while the growth holds: a consumer
	// reading it from the start gets nothing until the bound lifts it.
	manual := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := manual.ProduceSync(ctx, &kgo.Record{Topic: "bounded", Partition: 2, Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatalf("produce to the new partition: %v", err)
	}
	reader := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bounded": {2: kgo.NewOffset().AtStart()}}))
	fetches := reader.PollFetches(ctx)
	held := time.Since(grown)
	if err := fetches.Err(); err != nil {
		t.Fatal(err)
	}
	if held < 2*time.Second {
		t.Errorf("the new partition was read %v after the growth, before its 3 s bound", held)
	}
	forced := 0.0
	for i := range c.Brokers {
		n, _ := c.Metric(i, "raftka_growth_forced_lifts_total", `topic="bounded"`)
		forced += n
	}
	if forced != 1 {
		t.Errorf("forced lifts counted: %v, want 1", forced)
	}
	if st := status(); len(st.Growths) != 0 || st.LastLift == nil || st.LastLift.Reason != growth.Bound || st.ForcedLifts != 1 {
		t.Errorf("growth after the bound: %+v", st)
	}
}

// processGroup starts two consumer processes, each printing "key value
// partition" for every record it processed, and reports their lines to
// check until ctx ends.
func processGroup(ctx context.Context, t *testing.T, check *brokertest.KeyOrder, dir string, env []string, name string, args ...string) func() {
	var wg sync.WaitGroup
	for range 2 {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wg.Go(func() {
			lines := bufio.NewScanner(out)
			for lines.Scan() {
				var key string
				var seq int
				var partition int32
				if _, err := fmt.Sscan(lines.Text(), &key, &seq, &partition); err == nil {
					check.Process(key, seq, partition)
				}
			}
			_ = cmd.Wait() // killed when ctx ends
			if stderr.Len() > 0 {
				t.Logf("%s said: %s", name, stderr.String())
			}
		})
	}
	return wg.Wait
}

// kcatGroup: kcat's group consumer (librdkafka), reset to latest; its
// offsets are stored as it prints a record, and committed every 500 ms.
func kcatGroup(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder) func() {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed: apt-get install kcat (.ci/run does)")
	}
	return processGroup(ctx, t, check, "", nil, "kcat", "-G", groupOf(topic), "-b", strings.Join(c.AllAddrs(), ","), "-q", "-u",
		"-X", "auto.offset.reset=latest", "-X", "topic.metadata.refresh.interval.ms=2000", "-X", "auto.commit.interval.ms=500",
		"-f", "%k %s %p\n", topic)
}

// kafkajsGroup: KafkaJS consumers (testdata/kafkajs/growth.js), from the
// latest offset, committing after each record.
func kafkajsGroup(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string, check *brokertest.KeyOrder) func() {
	env := []string{"BROKERS=" + strings.Join(c.AllAddrs(), ","), "TOPIC=" + topic, "GROUP=g-" + topic}
	return processGroup(ctx, t, check, kafkajsDir(t), env, "node", "growth.js")
}

// TestOrderedGrowthWithKcatAndKafkaJSGroups: the guarantee for a group of
// librdkafka's consumers (kcat) and of KafkaJS's, from the latest offset,
// under the same keyed producer.
func TestOrderedGrowthWithKcatAndKafkaJSGroups(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	quick := map[string]*string{"raftka.growth.quiet.ms": kmsg.StringPtr("2000")}
	for _, g := range []struct {
		name  string
		group consumerGroup
		codec kgo.CompressionCodec
	}{
		{"kcat", kcatGroup, kgo.SnappyCompression()},
		// KafkaJS reads gzip but not snappy (franz-go's default) without a
		// codec package; gzip also cuts a batch at the hold with another codec.
		{"kafkajs", kafkajsGroup, kgo.GzipCompression()},
	} {
		run := runKeyedGrowth(t, c, scenario{topic: "ordered-" + g.name, configs: quick, group: g.group,
			producer: franzProducer(kgo.ProducerBatchCompression(g.codec))})
		t.Logf("%s group: %d records acknowledged, %d of them from new partitions, %d reordered, %d never processed", g.name, run.Acked, run.Grown, run.Reordered, run.Missing)
		if run.Grown == 0 || run.Reordered > 0 || run.Missing > 0 {
			t.Errorf("%s group: %d reordered (first: %s), %d never processed, %d from new partitions", g.name, run.Reordered, run.FirstBad, run.Missing, run.Grown)
		}
	}
}

// TestOrderedGrowthWithALibrdkafkaProducer: the guarantee for producers on
// librdkafka's default partitioner (CRC32), with the topic's
// raftka.growth.partitioner naming it, consumed by a franz-go group.
func TestOrderedGrowthWithALibrdkafkaProducer(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	configs := map[string]*string{"raftka.growth.quiet.ms": kmsg.StringPtr("2000"), "raftka.growth.partitioner": kmsg.StringPtr("crc32")}
	run := runKeyedGrowth(t, c, scenario{topic: "crc32", configs: configs, group: franzGroup, producer: librdkafkaProducer})
	t.Logf("librdkafka producer: %d records acknowledged, %d of them from new partitions, %d reordered, %d never processed", run.Acked, run.Grown, run.Reordered, run.Missing)
	if run.Acked == 0 || run.Grown == 0 || run.Reordered > 0 || run.Missing > 0 {
		t.Errorf("librdkafka producer: %d acknowledged, %d reordered (first: %s), %d never processed, %d from new partitions", run.Acked, run.Reordered, run.FirstBad, run.Missing, run.Grown)
	}
	for i := range c.Brokers {
		if n, ok := c.Metric(i, "raftka_growth_forced_lifts_total", `topic="crc32"`); ok && n > 0 {
			t.Errorf("broker %d lifted %v growths at their bound: with the partitioner named, the group should have drained them", i, n)
		}
	}
}

// groupOf is the consumer group each scenario's consumers of topic join.
func groupOf(topic string) string { return "g-" + topic }

// logGroupProgress logs, when a run stalls, where the group committed,
// each partition's end and leader, the group's members, and what a fetch
// from each stalled commit gets, so that a stall in CI says whether the
// group stopped committing or stopped fetching, and why.
func logGroupProgress(t *testing.T, c *brokertest.Cluster, topic string) {
	// A client of its own, seeded with the brokers still running: the
	// run's may name a dead coordinator, and a dead seed fails a request.
	adm := kadm.NewClient(c.Client(kgo.SeedBrokers(c.Bootstrap()...)))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	group := groupOf(topic)
	committed, err := adm.FetchOffsets(ctx, group)
	for try := 0; err != nil && try < 5 && ctx.Err() == nil; try++ {
		time.Sleep(time.Second)
		committed, err = adm.FetchOffsets(ctx, group)
	}
	ends, endErr := adm.ListEndOffsets(ctx, topic)
	t.Logf("%s: committed %v (err %v); ends %v (err %v)", group, committed.Offsets().KOffsets(), err, ends.Offsets().KOffsets(), endErr)
	if described, err := adm.DescribeGroups(ctx, group); err == nil {
		for _, m := range described[group].Members {
			assigned, _ := m.Assigned.AsConsumer()
			t.Logf("%s: state %s, member %s assigned %v", group, described[group].State, m.MemberID, assigned)
		}
	} else {
		t.Logf("%s: describing the group: %v", group, err)
	}
	if md, err := adm.Metadata(ctx, topic); err == nil {
		for _, p := range md.Topics[topic].Partitions.Sorted() {
			t.Logf("%s[%d]: leader %d epoch %d, isr %v, err %v", topic, p.Partition, p.Leader, p.LeaderEpoch, p.ISR, p.Err)
		}
	}
	for p, end := range ends.Offsets()[topic] {
		at, ok := committed.Offsets()[topic][p]
		if !ok || at.At >= end.At {
			continue
		}
		cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(at.At)}}))
		fetchCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fetches := cl.PollFetches(fetchCtx)
		cancel()
		cl.Close()
		t.Logf("%s[%d]: a fetch from the commit at %d got %d records, errors %v", topic, p, at.At, fetches.NumRecords(), fetches.Errors())
	}
}

// consumerLog writes a consumer's log to the test's log, which shows it
// only when the test fails (or with -v): franz-go's info lines, and of
// its debug lines those that tell where a partition's fetching stands
// (offsets loaded, leader epochs taken or ignored, partitions left out
// of a fetch). It stops at the test's cleanups: a line after would panic.
type consumerLog struct {
	t *testing.T
	// state: done once the test's cleanups reached the log; a line logs
	// under the read lock, so none can reach a finished test.
	state *consumerLogState
}

type consumerLogState struct {
	sync.RWMutex
	done bool
}

// consumerDebug are the debug messages consumerLog keeps.
var consumerDebug = []string{"assign requires loading offsets", "offsets to load broker", "handled ", "fetch stripped partitions",
	"metadata leader epoch went backwards", "metadata has a leader epoch of -1", "metadata refresh topic partition data changed",
	"metadata update is missing partition"}

// newConsumerLog must come before the clients it serves, so that its
// cleanup runs after theirs.
func newConsumerLog(t *testing.T) consumerLog {
	l := consumerLog{t: t, state: &consumerLogState{}}
	t.Cleanup(func() {
		l.state.Lock()
		defer l.state.Unlock()
		l.state.done = true
	})
	return l
}

func (l consumerLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l consumerLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	keep := level <= kgo.LogLevelInfo
	for _, prefix := range consumerDebug {
		keep = keep || strings.HasPrefix(msg, prefix)
	}
	if !keep {
		return
	}
	l.state.RLock()
	defer l.state.RUnlock()
	if !l.state.done {
		l.t.Logf("franz-go consumer %s: %s %v", level, msg, keyvals)
	}
}
