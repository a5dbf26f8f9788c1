package latency

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/benchreport"
)

var report benchreport.Table

func TestMain(m *testing.M) {
	benchreport.Main(m, &report, "latency", "Latency versus load",
		"Acknowledged produce at each number of records in flight, side by side in one run: 3 `raftka-broker` processes on 127.0.0.1 (6 partitions, replication factor 3), NATS JetStream (3 `nats-server` processes, one R3 file stream, `sync_interval: always`, so it too fsyncs before acknowledging) and franz-go's kfake (in memory, one copy: the protocol's and the client's ceiling here), package `broker/bench/latency`.", notes)
}

const notes = `### Reproduce

` + "```sh\nmake bench   # installs bin/nats-server, runs every benchmark\n```" + `

- Each load is a closed loop: a record is sent as soon as one of the N in flight is
  acknowledged, for RAFTKA_BENCH_LATENCY_SECONDS (8) after 2 s of warm-up; latency runs from
  the send to the acknowledgement. Records are 1 KiB and incompressible, compression off.
- The disk alone, at one message in flight: what any replicated log that fsyncs before
  acknowledging meets on this machine, with no network, Raft or protocol: three files on the
  benchmark's disk written with zeros first (the three replicas' logs), each message written
  to all three at once (1 KiB) and acknowledged once the first and the quicker of the other
  two are fdatasynced. Here the three replicas share one disk, so a stall of the disk delays
  all three at once and no choice of replicas avoids it: this p99 is a floor under Raftka's
  and NATS's alike. With more in flight, how a log batches its writes decides, not the disk.
- Raftka and kfake: one franz-go producer, acks=all, idempotent, linger 0, its default
  partitioner. Unkeyed records go where its sticky partitioner puts them, one partition per
  batch; keyed records carry keys 0-999 in turn, hashed with murmur2 as Kafka's Java client
  does, so a request holds a batch for each partition its broker leads. NATS: one nats.go JetStream connection publishing asynchronously to the stream.
- Ratios are Raftka's rate over the peer's (above 1 is faster) and Raftka's p99 over the
  peer's (below 1 is shorter); keyed over unkeyed likewise.
- Stages: the mean of each stage of raftka_produce_stage_seconds over the load (warm-up
  included), over all 3 brokers (docs/design/latency.md names them), the bucket that holds
  its p99 and its count: read, propose, commit and respond are per produce request on its
  partitions' leader, commit_spread per such request for several partitions (its first
  partition's result to its last's); log_frames_sync, log_record_sync and apply are per Raft log save and
  per apply on every replica, log_fdatasync per fdatasync of a broker's shared Raft log.
  "log fdatasyncs" is how many there were (saves that overlap share one) and their mean.
- RAFTKA_BENCH_PROFILES=dir leaves there a CPU profile of broker 0 over each load's
  measurement (N-unkeyed-cpu.pb.gz, N-keyed-cpu.pb.gz, for go tool pprof).
- What limits each row, and what changed it: docs/design/latency.md.`

// measuredLoads are the numbers of records in flight measured:
// RAFTKA_BENCH_LOADS (comma-separated) narrows them while a change is
// being tried.
func measuredLoads() []int {
	var loads []int
	for _, f := range strings.Split(os.Getenv("RAFTKA_BENCH_LOADS"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			loads = append(loads, n)
		}
	}
	if len(loads) == 0 {
		return []int{1, 64, 512, 4096, 16384}
	}
	return loads
}

// value is a 1 KiB incompressible record.
func value() []byte {
	v := make([]byte, 1024)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(v)
	return v
}

// keyCount is how many keys the keyed loads cycle through: enough that
// every partition gets records in every request, as an application's
// customer or row ids spread them.
const keyCount = 1000

// kafkaProducer returns a sendFunc producing to topic bench through a
// franz-go client of seeds, and a function that closes the client. keyed
// gives each record one of keyCount keys in turn, which the client's
// default partitioner hashes (murmur2, as Kafka's Java client); unkeyed
// records go where its sticky partitioner puts them, a batch at a time.
func kafkaProducer(b *testing.B, seeds []string, inFlight int, keyed bool) (sendFunc, func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(inFlight+16))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	v := value()
	var keys [][]byte
	if keyed {
		for k := range keyCount {
			keys = append(keys, []byte(strconv.Itoa(k)))
		}
	}
	var next atomic.Uint64
	send := func(done func(error)) {
		r := &kgo.Record{Value: v}
		if keyed {
			r.Key = keys[next.Add(1)%keyCount]
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) { done(err) })
	}
	return send, cl.Close
}

func BenchmarkLatencyVersusLoad(b *testing.B) {
	raftka := brokertest.Start(b, brokertest.Options{Brokers: 3, ExtraFlags: profileFlags()})
	raftka.CreateTopic("bench", 6, 3, nil)
	fake, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(6, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	nats := startNATS(b)
	loads := measuredLoads()
	var disk sendFunc // the three files are written only if one in flight is measured
	if slices.Contains(loads, 1) {
		disk = diskAlone(b, b.TempDir())
	}

	warm, measure := 2*time.Second, benchreport.Seconds("RAFTKA_BENCH_LATENCY_SECONDS", 8*time.Second)
	report.SetColumns("in flight", "Raftka", "Raftka, keyed", "NATS JetStream R3 ("+nats.version+")", "kfake", "kfake, keyed", "the disk alone, 1 in flight",
		"Raftka keyed / unkeyed: rate, p99", "Raftka / NATS: rate, p99 (unkeyed; keyed)", "Raftka's stages, mean ms (p99 at most)", "Raftka's stages, keyed")
	for _, n := range loads {
		run := func(send sendFunc, stop func()) loadResult {
			defer stop()
			return closedLoop(n, warm, measure, send)
		}
		before := scrapeStages(raftka)
		profileDuring(b, raftka, fmt.Sprintf("%d-unkeyed", n), warm, measure)
		ours := run(kafkaProducer(b, raftka.Bootstrap(), n, false))
		mid := scrapeStages(raftka)
		profileDuring(b, raftka, fmt.Sprintf("%d-keyed", n), warm, measure)
		keyed := run(kafkaProducer(b, raftka.Bootstrap(), n, true))
		stages, keyedStages := mid.since(before), scrapeStages(raftka).since(mid)
		peer := run(nats.publisher(b, fmt.Sprintf("bench%d", n), value(), n))
		ceiling := run(kafkaProducer(b, fake.ListenAddrs(), n, false))
		keyedCeiling := run(kafkaProducer(b, fake.ListenAddrs(), n, true))
		// One message at a time is where the disk alone is a floor; with
		// more, how a log batches its writes decides, not the disk.
		floor := "–"
		if n == 1 {
			floor = run(disk, func() {}).String()
		}
		for name, r := range map[string]loadResult{"": ours, "keyed-": keyed} {
			b.ReportMetric(r.rate, fmt.Sprintf("%srecords/s@%d", name, n))
			b.ReportMetric(float64(r.percentile(0.99).Microseconds())/1000, fmt.Sprintf("%sp99-ms@%d", name, n))
		}
		report.AddRow(benchreport.Thousands(float64(n)), ours.String(), keyed.String(), peer.String(), ceiling.String(), keyedCeiling.String(), floor,
			ratios(keyed, ours), ratios(ours, peer)+"; "+ratios(keyed, peer), stages, keyedStages)
		b.Logf("%d in flight: raftka %s | keyed %s | nats %s | kfake %s | kfake keyed %s | disk alone %s | stages %s | keyed stages %s",
			n, ours, keyed, peer, ceiling, keyedCeiling, floor, stages, keyedStages)
	}
}

// ratios is a's rate over b's and a's p99 over b's.
func ratios(a, b loadResult) string {
	return fmt.Sprintf("%.2fx, %.2fx", a.rate/b.rate, float64(a.percentile(0.99))/float64(b.percentile(0.99)))
}
