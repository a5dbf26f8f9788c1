package bench

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/internal/benchreport"
)

// idlePartitions is the partition count of BenchmarkIdlePartitions'
// topic: 1,000, or RAFTKA_BENCH_IDLE_PARTITIONS.
var idlePartitions = envInt("RAFTKA_BENCH_IDLE_PARTITIONS", 1000)

// BenchmarkIdlePartitions: 3 brokers, one topic of 1,000 partitions with
// replication factor 3, so every broker hosts 1,000 replica groups. It
// measures their creation, what they cost once quiet (and what each
// replica of a second topic of as many partitions adds), the first produce
// to a quiet partition, the failover of quiet partitions whose leader is
// SIGKILLed, and the leaderships the broker's restart moves.
func BenchmarkIdlePartitions(b *testing.B) {
	c := brokertest.Start(b, brokertest.Options{Brokers: 3, ExtraFlags: append(benchFlags(), profileFlags()...)})
	base := c.RSS(0)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(10, idlePartitions/100))*time.Minute)
	defer cancel()
	// Watched from the request on: the answer also waits, up to 4 s, for
	// the preferred replicas to take their leaderships.
	led := make(chan time.Duration, 1)
	go func() { awaitLeaders(ctx, b, c); led <- time.Since(start) }()
	go saveProfile(b, c, 0, "create-"+strconv.Itoa(idlePartitions), "cpu", 10)
	resp, err := c.Admin().CreateTopic(ctx, int32(idlePartitions), 3, nil, "idle")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatal(err)
	}
	n := benchreport.Thousands(float64(idlePartitions))
	row(n+" partitions (RF 3): CreateTopics answered (every partition led, by its preferred replica where it is up)", fmt.Sprintf("%.1f s", time.Since(start).Seconds()))
	row(n+" partitions (RF 3) created until all have leaders", fmt.Sprintf("%.1f s", (<-led).Seconds()))
	// The groups go quiet once idle for QuietAfter; the leader balancer
	// moves leaderships to preferred replicas before that.
	time.Sleep(replica.QuietAfter(replica.DefaultRTT) + 10*time.Second)
	idleCPU(c)
	row("RSS of a broker before / with "+n+" idle partition replicas", mib(base)+" / "+mib(c.RSS(0)))
	for i := 1; i < 3; i++ {
		row(fmt.Sprintf("RSS broker %d with %s idle partition replicas", i, n), mib(c.RSS(i)))
	}
	saveProfiles(b, c, 0, "idle-"+strconv.Itoa(idlePartitions), 10)
	addedReplicasRSS(ctx, b, c)
	firstProduceAfterRest(ctx, b, c)
	quietFailover(ctx, b, c)
}

// addedReplicasRSS creates as many partitions again, in a second topic,
// and reports what each added replica costs in RSS once quiet: the rows
// above divide by the replicas what the broker holds for its peers
// whatever their number too (the Raft transport's buffers).
func addedReplicasRSS(ctx context.Context, b *testing.B, c *brokertest.Cluster) {
	before := make([]int64, 3)
	for i := range before {
		before[i] = c.RSS(i)
	}
	resp, err := c.Admin().CreateTopic(ctx, int32(idlePartitions), 3, nil, "idle-more")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(replica.QuietAfter(replica.DefaultRTT) + 10*time.Second)
	each := make([]string, 3)
	for i := range each {
		each[i] = fmt.Sprintf("%.3f MiB", float64(c.RSS(i)-before[i])/(1<<20)/float64(idlePartitions))
	}
	n := benchreport.Thousands(float64(idlePartitions))
	row("RSS of each broker per replica added, from "+n+" to "+benchreport.Thousands(float64(2*idlePartitions))+" idle replicas (a second topic of "+n+" partitions, RF 3)", fmt.Sprint(each))
}

// awaitLeaders waits until every partition of the idle topic has a leader.
func awaitLeaders(ctx context.Context, b *testing.B, c *brokertest.Cluster) {
	for {
		md, err := c.Admin().Metadata(ctx, "idle")
		if err == nil {
			led := 0
			for _, p := range md.Topics["idle"].Partitions {
				if p.Leader >= 0 {
					led++
				}
			}
			if led == idlePartitions {
				return
			}
		}
		if ctx.Err() != nil {
			b.Error("partitions did not all get leaders")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// idleCPU reports each broker's CPU over 10 s with the groups quiet.
func idleCPU(c *brokertest.Cluster) {
	before, from := make([]time.Duration, 3), time.Now()
	for i := range before {
		before[i] = c.CPUTime(i)
	}
	time.Sleep(10 * time.Second)
	share := make([]string, 3)
	for i := range share {
		share[i] = fmt.Sprintf("%.1f%%", 100*float64(c.CPUTime(i)-before[i])/float64(time.Since(from)))
	}
	row("CPU of each broker with "+benchreport.Thousands(float64(idlePartitions))+" idle (quiet) partition replicas (share of one core, over 10 s)", fmt.Sprint(share))
}

// firstProduceAfterRest times an acks=all produce of one record to each of
// 200 quiet partitions in turn, each the first after the group's rest.
func firstProduceAfterRest(ctx context.Context, b *testing.B, c *brokertest.Cluster) {
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// The client's metadata and connections first, from a partition the
	// samples do not use.
	if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "idle", Partition: int32(idlePartitions) - 1, Value: []byte("warm")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	for p := range int32(200) {
		start := time.Now()
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "idle", Partition: p, Value: []byte("first")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	row("first acks=all produce to a quiet partition (200 partitions, one after another)",
		fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms", ms(percentile(took, 0.5)), ms(percentile(took, 0.99)), ms(took[len(took)-1])))
}

// quietFailover SIGKILLs broker 1 with the groups quiet again, and times
// an acks=all produce to each of 20 partitions it led, from the kill to
// the acknowledgement; then, with the groups quiet again, restarts it and
// counts the partitions whose leadership changed after, the ones handed
// back to it included.
func quietFailover(ctx context.Context, b *testing.B, c *brokertest.Cluster) {
	time.Sleep(replica.QuietAfter(replica.DefaultRTT) + 2*time.Second) // the samples above woke 200 groups
	md, err := c.Admin().Metadata(ctx, "idle")
	if err != nil {
		b.Fatal(err)
	}
	var led []int32
	for _, p := range md.Topics["idle"].Partitions.Sorted() {
		if p.Leader == 1 && len(led) < 20 {
			led = append(led, p.Partition)
		}
	}
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.ProduceRequestTimeout(2*time.Second))
	if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "idle", Partition: int32(idlePartitions) - 1, Value: []byte("warm")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	killed := time.Now()
	c.Kill(1)
	took := make([]time.Duration, len(led))
	var wg sync.WaitGroup
	for i, p := range led {
		wg.Go(func() {
			if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "idle", Partition: p, Value: []byte("after")}).FirstErr(); err != nil {
				b.Error(err)
			}
			took[i] = time.Since(killed)
		})
	}
	wg.Wait()
	row(fmt.Sprintf("failover of quiet partitions: SIGKILL of their leader to the next acknowledged record (%d partitions)", len(led)), spread(took))
	time.Sleep(replica.QuietAfter(replica.DefaultRTT) + 2*time.Second)
	before := leaderEpochs(ctx, b, c)
	restarted := time.Now()
	c.Restart(1)
	awaitReady(ctx, b, c, 1)
	row("restart of a broker holding "+benchreport.Thousands(float64(2*idlePartitions))+" quiet replicas (both topics): from its start to ready (/readyz: metadata caught up, every replica started)",
		fmt.Sprintf("%.1f s", time.Since(restarted).Seconds()))
	time.Sleep(15 * time.Second)
	after, changed := leaderEpochs(ctx, b, c), 0
	for p, le := range after {
		if le != before[p] {
			changed++
		}
	}
	row("restart of a broker that led 1/3 of "+benchreport.Thousands(float64(idlePartitions))+" quiet partitions: partitions whose leader or epoch changed in the 15 s after (its handbacks included)",
		fmt.Sprintf("%d, of which ~%d handed back", changed, idlePartitions/3))
}

// awaitReady waits, as long as ctx allows, until broker i answers /readyz
// with 200.
func awaitReady(ctx context.Context, b *testing.B, c *brokertest.Cluster, i int) {
	for ctx.Err() == nil {
		if resp, err := http.Get("http://" + c.Brokers[i].HTTPAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("broker %d not ready: %v", i, ctx.Err())
}

// leaderEpochs is each partition's leader and leader epoch of the idle
// topic, as a broker answers Metadata.
func leaderEpochs(ctx context.Context, b *testing.B, c *brokertest.Cluster) map[int32][2]int32 {
	md, err := kadm.NewClient(c.Client()).Metadata(ctx, "idle")
	if err != nil {
		b.Fatal(err)
	}
	out := map[int32][2]int32{}
	for _, p := range md.Topics["idle"].Partitions {
		out[p.Partition] = [2]int32{p.Leader, p.LeaderEpoch}
	}
	return out
}
