package moves

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/internal/benchreport"
)

var report benchreport.Table

func row(name, value string) { report.Add(name, value) }

func TestMain(m *testing.M) {
	benchreport.Main(m, &report, "moves", "Restarts and replica moves",
		"Real `raftka-broker` processes on 127.0.0.1 and a real franz-go client, package `broker/bench/moves`.", notes)
}

const notes = `### Reproduce

` + "```sh\nmake bench\n```" + `

- Rolling restart: 3 brokers, a topic of 6 partitions with replication factor 3, an
  idempotent franz-go producer with acks=all writing without pause (its metadata refresh
  lowered to 100 ms, as in the failover benchmark, so that the broker is measured, not the
  client's 5 s default); each broker in turn gets SIGTERM, is started again once it exited,
  and the next follows 5 s after it is ready. The stall is the longest time between two
  acknowledgements over the whole restart; the same run with --controlled-shutdown-timeout=0
  (a broker stops at once, and its groups wait an election timeout for a new leader) and
  with the default (it first hands each leadership to a caught-up voter) alternate in one
  process.
- Replica move: 4 brokers; one partition (replication factor 3) filled with 1 GiB of 1 KiB
  records (RAFTKA_BENCH_MOVE_BYTES changes it); a producer writes 1 KiB records to a second
  topic of 3 partitions for 15 s without a move (20 s after the fill), then during the move of
  one replica of the large partition to the fourth broker (AlterPartitionReassignments, no
  throttle set), then 15 s more without; the rate without is the mean of before and after. The
  move's time is from the request until ListPartitionReassignments lists it no more and the
  partition's replicas are the target's, all in sync.`

// stallOf runs a rolling restart of c under a steady produce load and
// returns the longest gap between acknowledgements.
func stallOf(b *testing.B, c *brokertest.Cluster) time.Duration {
	acks := brokertest.NewLedger()
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	defer producer.Close()
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := acks.ProduceUntil(producer, "rolled", 6, stop)
		done <- err
	}()
	time.Sleep(3 * time.Second)
	for i := range c.Brokers {
		c.Stop(i)
		c.Restart(i)
		c.WaitReady(i)
		time.Sleep(5 * time.Second)
	}
	close(stop)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if acks.Fails() > 0 {
		b.Errorf("%d records not acknowledged", acks.Fails())
	}
	return acks.LongestAckGap()
}

func BenchmarkRollingRestart(b *testing.B) {
	var with, without []time.Duration
	for round := 0; round < 2; round++ {
		for _, controlled := range []bool{false, true} {
			flags := []string{"--controlled-shutdown-timeout", "0"}
			if controlled {
				flags = nil
			}
			c := brokertest.Start(b, brokertest.Options{Brokers: 3, ExtraFlags: flags})
			c.CreateTopic("rolled", 6, 3, nil)
			stall := stallOf(b, c)
			c.StopAll()
			if controlled {
				with = append(with, stall)
			} else {
				without = append(without, stall)
			}
		}
	}
	slices.Sort(with)
	slices.Sort(without)
	row("produce stall during a rolling restart of 3 brokers (SIGTERM), longest gap between acknowledgements: without controlled shutdown (2 runs)",
		fmt.Sprintf("%.2f s, %.2f s", without[0].Seconds(), without[1].Seconds()))
	row("the same with controlled shutdown, the default (2 runs, alternating with the above)",
		fmt.Sprintf("%.2f s, %.2f s; %.2fx the stall without", with[0].Seconds(), with[1].Seconds(), with[1].Seconds()/without[1].Seconds()))
}

func moveBytes() int64 {
	if v, err := strconv.ParseInt(os.Getenv("RAFTKA_BENCH_MOVE_BYTES"), 10, 64); err == nil && v > 0 {
		return v
	}
	return 1 << 30
}

// produceFor produces 1 KiB records to topic for d and returns the rate.
func produceFor(b *testing.B, c *brokertest.Cluster, topic string, d time.Duration) float64 {
	value := make([]byte, 1024)
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedBytes(16<<20), kgo.ProducerLinger(2*time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	defer producer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	var acked atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for time.Since(start) < d {
		wg.Add(1)
		producer.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err == nil {
				acked.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	return float64(acked.Load()) / time.Since(start).Seconds()
}

func BenchmarkReplicaMove(b *testing.B) {
	c := brokertest.Start(b, brokertest.Options{Brokers: 4})
	c.CreateTopic("large", 1, 3, nil)
	c.CreateTopic("others", 3, 3, nil)
	admin := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	records := int(moveBytes() / 1024)
	value := make([]byte, 1024)
	fill := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("large"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedBytes(16<<20), kgo.ProducerLinger(2*time.Millisecond))
	for i := 0; i < records; i++ {
		fill.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := fill.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	fill.Close()
	md, err := admin.Metadata(ctx, "large")
	if err != nil {
		b.Fatal(err)
	}
	from := md.Topics["large"].Partitions[0].Replicas
	var joining int32
	for id := int32(0); id < 4; id++ {
		if !slices.Contains(from, id) {
			joining = id
		}
	}
	target := []int32{from[0], from[1], joining}

	// The fill's snapshots and compactions settle first.
	time.Sleep(20 * time.Second)
	before := produceFor(b, c, "others", 15*time.Second)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("large", 0, target)
	start := time.Now()
	resp, err := admin.AlterPartitionAssignments(ctx, req)
	if err != nil || resp["large"][0].Err != nil {
		b.Fatalf("move: %v %v", err, resp)
	}
	moved := make(chan time.Duration, 1)
	go func() {
		for ctx.Err() == nil {
			list, lerr := admin.ListPartitionReassignments(ctx, kadm.TopicsSet{"large": {0: {}}})
			md, merr := admin.Metadata(ctx, "large")
			if lerr == nil && merr == nil && len(list["large"]) == 0 {
				p := md.Topics["large"].Partitions[0]
				if len(p.Replicas) == 3 && slices.Contains(p.Replicas, joining) && len(p.ISR) == 3 {
					moved <- time.Since(start)
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	var during float64
	var took time.Duration
	var rates []float64
	for took == 0 {
		rates = append(rates, produceFor(b, c, "others", 3*time.Second))
		select {
		case took = <-moved:
		default:
		}
	}
	for _, r := range rates {
		during += r
	}
	during /= float64(len(rates))
	after := produceFor(b, c, "others", 15*time.Second)
	without := (before + after) / 2
	row(fmt.Sprintf("move of one replica of a %s partition (RF 3) to another broker, under the produce load below", mib(moveBytes())),
		fmt.Sprintf("%.1f s (%.0f MB/s)", took.Seconds(), float64(moveBytes())/took.Seconds()/1e6))
	row("produce rate of other partitions (3, RF 3, acks=all, 1 KiB) during the move / without it (the mean of 15 s before and 15 s after)",
		fmt.Sprintf("%.0f / %.0f records/s (before %.0f, after %.0f), %.2fx", during, without, before, after, during/without))
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
