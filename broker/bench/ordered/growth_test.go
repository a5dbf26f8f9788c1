package ordered

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/benchreport"
)

var report benchreport.Table

// columns: both benchmarks add rows, so the table is set up by whichever
// runs first.
var columns = []string{"measurement", "ordered growth (this build)", "unordered growth / the build before ordered growth", "no growth"}

func TestMain(m *testing.M) {
	benchreport.Main(m, &report, "ordered-growth", "Ordered growth",
		"Real `raftka-broker` processes on 127.0.0.1 and real franz-go clients, package `broker/bench/ordered`.", notes)
}

const notes = `### Reproduce

` + "```sh\nmake bench\n```" + `

- Across a growth: 3 brokers, a topic of 4 partitions with replication factor 3 and the
  default ordered-growth configs (raftka.growth.quiet.ms 5 s), 200-byte records over 1,000
  keys (murmur2). A group of one franz-go consumer (commits every 5 s, its default; metadata
  refreshed every 2 s, as the integration tests do) processes at most 10,000 records/s. A
  backlog is produced, the topic grows 4 -> 6, and 20,000 more records follow at 5,000/s.
  "New partitions reached" is the time from the growth until the group processes its first
  record of a new partition. The rate is what the group processed after the growth (the lag
  then, plus the 20,000) over the time it took, as a ratio to the same run without a growth.
- Fetch path: the same cluster shape, twice, side by side: this build and the last build
  without ordered growth (make bench builds it from git). 200,000 records of 200 bytes in 4
  partitions, read from the start by a consumer without a group (three reads each,
  alternating, the median shown); then one record every 10 ms for 10 s, each timed from its
  produce to its fetch by a tailing consumer.`

const (
	keys        = 1000
	valueBytes  = 200
	postRecords = 20_000
	postRate    = 5_000  // records/s after the growth
	processRate = 10_000 // records/s the group processes at most
)

// followGrowth: clients refresh metadata every 2 s, so that the broker's
// hold is measured rather than the client's 5 minute default.
var followGrowth = []kgo.Opt{kgo.MetadataMaxAge(2 * time.Second), kgo.MetadataMinAge(250 * time.Millisecond)}

func record(topic string, i int) *kgo.Record {
	v := make([]byte, valueBytes)
	copy(v, strconv.Itoa(i))
	return &kgo.Record{Topic: topic, Key: []byte("key-" + strconv.Itoa(i%keys)), Value: v}
}

// produce writes n keyed records from i, at most rate per second (0: as
// fast as the client goes), and waits for their acknowledgements.
func produce(b *testing.B, cl *kgo.Client, topic string, from, n, rate int) {
	ctx := context.Background()
	began := time.Now()
	var failed error
	var mu sync.Mutex
	for i := from; i < from+n; i++ {
		if rate > 0 {
			if ahead := time.Duration(i-from)*time.Second/time.Duration(rate) - time.Since(began); ahead > 0 {
				time.Sleep(ahead)
			}
		}
		cl.Produce(ctx, record(topic, i), func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil || failed != nil {
		b.Fatalf("produce: %v %v", err, failed)
	}
}

// tally is what a group processed: each record once, however often a
// rebalance delivered it.
type tally struct {
	mu       sync.Mutex
	seen     map[int32]map[int64]bool
	n        int
	firstNew time.Time // the first record of a partition the growth added
}

func (t *tally) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// consume runs a group consumer of topic that processes at most
// processRate records/s, until ctx ends.
func consume(ctx context.Context, c *brokertest.Cluster, topic string, from int32, t *tally) (wait func()) {
	cl := c.Client(append(slices.Clone(followGrowth), kgo.ConsumerGroup("g-"+topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cl.Close()
		for ctx.Err() == nil {
			fetches := cl.PollRecords(ctx, 1000)
			n := 0
			t.mu.Lock()
			fetches.EachRecord(func(r *kgo.Record) {
				n++
				if t.seen[r.Partition] == nil {
					t.seen[r.Partition] = map[int64]bool{}
				}
				if !t.seen[r.Partition][r.Offset] {
					t.seen[r.Partition][r.Offset] = true
					t.n++
				}
				if r.Partition >= from && t.firstNew.IsZero() {
					t.firstNew = time.Now()
				}
			})
			t.mu.Unlock()
			time.Sleep(time.Duration(n) * time.Second / processRate)
		}
	})
	return wg.Wait
}

// acrossGrowth is one run: the lag at the growth, how long the group took
// to process that lag and the records after, and when it reached a new
// partition.
type acrossGrowth struct {
	lag              int
	took, reachedNew time.Duration
}

func (r acrossGrowth) rate() float64 { return float64(r.lag+postRecords) / r.took.Seconds() }

// runAcrossGrowth runs the scenario of the notes with mode "none" (no
// growth), "ordered" or "unordered" (raftka.growth.ordered=false).
func runAcrossGrowth(b *testing.B, c *brokertest.Cluster, backlog int, mode string) acrossGrowth {
	topic := fmt.Sprintf("%s-%d", mode, backlog)
	var configs map[string]*string
	if mode == "unordered" {
		configs = map[string]*string{"raftka.growth.ordered": kmsg.StringPtr("false")}
	}
	c.CreateTopic(topic, 4, 3, configs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t := &tally{seen: map[int32]map[int64]bool{}}
	wait := consume(ctx, c, topic, 4, t)
	defer wait()
	defer cancel()
	time.Sleep(3 * time.Second) // the group joins before the backlog is written
	producer := c.Client(append(slices.Clone(followGrowth), kgo.ProducerLinger(5*time.Millisecond))...)
	defer producer.Close()
	produce(b, producer, topic, 0, backlog, 0)

	grown := time.Now()
	run := acrossGrowth{lag: backlog - t.count()}
	if mode != "none" {
		if _, err := c.Admin().CreatePartitions(ctx, 2, topic); err != nil {
			b.Fatal(err)
		}
	}
	produce(b, producer, topic, backlog, postRecords, postRate)
	for t.count() < backlog+postRecords {
		if ctx.Err() != nil {
			b.Fatalf("%s: %d of %d records processed", topic, t.count(), backlog+postRecords)
		}
		time.Sleep(10 * time.Millisecond)
	}
	run.took = time.Since(grown)
	t.mu.Lock()
	if !t.firstNew.IsZero() {
		run.reachedNew = t.firstNew.Sub(grown)
	}
	t.mu.Unlock()
	return run
}

// BenchmarkAcrossAGrowth: the first two measures of the issue, for
// backlogs of 0, 20,000 and 100,000 records.
func BenchmarkAcrossAGrowth(b *testing.B) {
	c := brokertest.Start(b, brokertest.Options{Brokers: 3})
	report.SetColumns(columns...)
	for _, backlog := range []int{0, 20_000, 100_000} {
		none := runAcrossGrowth(b, c, backlog, "none")
		on := runAcrossGrowth(b, c, backlog, "ordered")
		off := runAcrossGrowth(b, c, backlog, "unordered")
		b.Logf("backlog %d: none %+v, ordered %+v, unordered %+v", backlog, none, on, off)
		report.AddRow(fmt.Sprintf("backlog %d (lag at the growth %d / %d): growth to a new partition's first record", backlog, on.lag, off.lag),
			seconds(on.reachedNew), seconds(off.reachedNew), "")
		report.AddRow(fmt.Sprintf("backlog %d: records/s processed across the growth", backlog),
			fmt.Sprintf("%.0f (%.2fx)", on.rate(), on.rate()/none.rate()),
			fmt.Sprintf("%.0f (%.2fx)", off.rate(), off.rate()/none.rate()),
			fmt.Sprintf("%.0f (lag %d)", none.rate(), none.lag))
	}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// BenchmarkFetchPathWithoutGrowth: the hold's cost on the Fetch path with
// no growth under way, against the last build without ordered growth
// ($RAFTKA_BENCH_BASELINE_BIN), side by side.
func BenchmarkFetchPathWithoutGrowth(b *testing.B) {
	baseline := os.Getenv("RAFTKA_BENCH_BASELINE_BIN")
	if baseline == "" {
		b.Fatal("RAFTKA_BENCH_BASELINE_BIN names the build to compare with: make bench builds it")
	}
	clusters := map[string]*brokertest.Cluster{
		"this build": brokertest.Start(b, brokertest.Options{Brokers: 3}),
		"baseline":   brokertest.Start(b, brokertest.Options{Brokers: 3, Binary: baseline}),
	}
	const records = 200_000
	reads := map[string][]float64{}
	for _, c := range clusters {
		c.CreateTopic("read", 4, 3, nil)
		producer := c.Client(kgo.ProducerLinger(5 * time.Millisecond))
		produce(b, producer, "read", 0, records, 0)
		producer.Close()
	}
	for range 3 {
		for _, name := range []string{"baseline", "this build"} {
			reads[name] = append(reads[name], readRate(b, clusters[name], "read", records))
		}
	}
	tails := map[string][]time.Duration{}
	for _, name := range []string{"baseline", "this build"} {
		tails[name] = tailLatencies(b, clusters[name])
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	cur, base := median(reads["this build"]), median(reads["baseline"])
	report.SetColumns(columns...)
	report.AddRow("Fetch path, no growth: records/s read from the start", fmt.Sprintf("%.0f (%.2fx)", cur, cur/base), fmt.Sprintf("%.0f", base), "")
	p := func(name string, q float64) float64 { return ms(tails[name][int(q*float64(len(tails[name])-1))]) }
	report.AddRow("Fetch path, no growth: produce to fetch, p50 / p99",
		fmt.Sprintf("%.1f / %.1f ms (%.2fx / %.2fx)", p("this build", 0.5), p("this build", 0.99), p("this build", 0.5)/p("baseline", 0.5), p("this build", 0.99)/p("baseline", 0.99)),
		fmt.Sprintf("%.1f / %.1f ms", p("baseline", 0.5), p("baseline", 0.99)), "")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// readRate reads n records of topic from the start, without a group.
func readRate(b *testing.B, c *brokertest.Cluster, topic string, n int) float64 {
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began, got := time.Now(), 0
	for got < n {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("read %d of %d records", got, n)
		}
		got += fetches.NumRecords()
	}
	return float64(got) / time.Since(began).Seconds()
}

// tailLatencies produces one record every 10 ms for 10 s to a fresh
// topic and times each from its produce to its fetch by a tailing
// consumer, sorted.
func tailLatencies(b *testing.B, c *brokertest.Cluster) []time.Duration {
	c.CreateTopic("tail", 1, 3, nil)
	consumer := c.Client(kgo.ConsumeTopics("tail"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(time.Second))
	defer consumer.Close()
	producer := c.Client()
	defer producer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 1000
	sent := make([]time.Time, n)
	var mu sync.Mutex
	go func() {
		for i := range n {
			mu.Lock()
			sent[i] = time.Now()
			mu.Unlock()
			producer.Produce(ctx, &kgo.Record{Topic: "tail", Value: []byte(strconv.Itoa(i))}, nil)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var out []time.Duration
	for len(out) < n && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			i, _ := strconv.Atoi(string(r.Value))
			mu.Lock()
			out = append(out, time.Since(sent[i]))
			mu.Unlock()
		})
	}
	if len(out) < n {
		b.Fatalf("tailed %d of %d records", len(out), n)
	}
	slices.Sort(out)
	return out
}
