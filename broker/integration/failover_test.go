package integration

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
)

// ackLog records what the brokers acknowledged.
type ackLog struct {
	mu    sync.Mutex
	acked map[string]int64 // value -> offset
	part  map[string]int32
	fails int
}

func newAckLog() *ackLog { return &ackLog{acked: map[string]int64{}, part: map[string]int32{}} }

func (a *ackLog) record(r *kgo.Record, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.fails++
		return
	}
	a.acked[string(r.Value)] = r.Offset
	a.part[string(r.Value)] = r.Partition
}

// produceWhile produces sequence-numbered records to every partition in
// turn until stop closes, waiting for acknowledgements at the end.
func produceWhile(t *testing.T, cl *kgo.Client, topic string, partitions int32, stop <-chan struct{}, acks *ackLog) int {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	sent := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			if err := cl.Flush(ctx); err != nil {
				t.Fatalf("flush: %v", err)
			}
			return sent
		default:
		}
		r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: []byte(strconv.Itoa(i))}
		cl.Produce(ctx, r, acks.record)
		sent++
		if i%50 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// verifyExactlyOnce reads the topic and checks that every acknowledged
// record is there once, at its acknowledged offset, and that each partition
// holds its records in the order they were produced.
func verifyExactlyOnce(t *testing.T, c *brokertest.Cluster, topic string, acks *ackLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := c.Admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadmOffset) { total += o.Offset })
	got := consumeAll(t, c, topic, int(total))
	seen := map[string]bool{}
	last := map[int32]int{}
	for _, r := range got {
		v := string(r.Value)
		if seen[v] {
			t.Fatalf("record %s stored twice", v)
		}
		seen[v] = true
		n, _ := strconv.Atoi(v)
		if prev, ok := last[r.Partition]; ok && n <= prev {
			t.Fatalf("partition %d: record %d stored after %d", r.Partition, n, prev)
		}
		last[r.Partition] = n
		if off, ok := acks.acked[v]; ok && (off != r.Offset || acks.part[v] != r.Partition) {
			t.Fatalf("record %s acknowledged at %d/%d, stored at %d/%d", v, acks.part[v], off, r.Partition, r.Offset)
		}
	}
	var missing []string
	for v := range acks.acked {
		if !seen[v] {
			missing = append(missing, v)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("%d acknowledged records lost, e.g. %v", len(missing), missing[:min(10, len(missing))])
	}
	t.Logf("%d records acknowledged, %d stored, %d produce errors", len(acks.acked), len(got), acks.fails)
}

func TestLeaderKillLosesNothingAcknowledged(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	min2 := "2"
	c.CreateTopic("ledger", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5*time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	acks := newAckLog()
	stop := make(chan struct{})
	done := make(chan int)
	go func() { done <- produceWhile(t, producer, "ledger", 3, stop, acks) }()

	for round, p := range []int32{0, 1} {
		time.Sleep(2 * time.Second)
		victim := c.LeaderOf("ledger", p)
		t.Logf("round %d: SIGKILL broker %d, leader of partition %d", round, victim, p)
		c.Kill(victim)
		time.Sleep(3 * time.Second)
		c.Restart(victim)
		c.WaitReady(victim)
	}
	time.Sleep(time.Second)
	close(stop)
	sent := <-done
	if len(acks.acked) != sent {
		t.Fatalf("%d of %d records acknowledged: with unlimited retries every one should be", len(acks.acked), sent)
	}
	verifyExactlyOnce(t, c, "ledger", acks)

	// All brokers die at once and come back: the same records are there.
	for i := range c.Brokers {
		c.Kill(i)
	}
	for i := range c.Brokers {
		c.Restart(i)
	}
	for i := range c.Brokers {
		c.WaitReady(i)
	}
	verifyExactlyOnce(t, c, "ledger", acks)
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
