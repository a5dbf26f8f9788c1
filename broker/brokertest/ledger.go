package brokertest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Ledger records what the brokers acknowledged to a producer, so a test can
// check afterwards that every acknowledged record is stored exactly once, at
// its acknowledged offset, in order.
type Ledger struct {
	mu          sync.Mutex
	acked       map[string]int64 // value -> offset
	part        map[string]int32
	perPart     map[int32]int // acknowledged records per partition
	fails       int
	lastAck     time.Time
	longestWait time.Duration
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{acked: map[string]int64{}, part: map[string]int32{}, perPart: map[int32]int{}}
}

// Record is a franz-go produce promise.
func (l *Ledger) Record(r *kgo.Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.fails++
		return
	}
	now := time.Now()
	if !l.lastAck.IsZero() && now.Sub(l.lastAck) > l.longestWait {
		l.longestWait = now.Sub(l.lastAck)
	}
	l.lastAck = now
	if _, again := l.acked[string(r.Value)]; !again {
		l.perPart[r.Partition]++
	}
	l.acked[string(r.Value)] = r.Offset
	l.part[string(r.Value)] = r.Partition
}

// Acked is how many records were acknowledged.
func (l *Ledger) Acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// AckedOn is how many records were acknowledged on a partition.
func (l *Ledger) AckedOn(partition int32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perPart[partition]
}

// Fails is how many produce promises returned an error.
func (l *Ledger) Fails() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fails
}

// LongestAckGap is the longest time between two acknowledgements: while a
// producer keeps producing, how long production stalled at worst.
func (l *Ledger) LongestAckGap() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.longestWait
}

// ProduceUntil produces sequence-numbered records to every partition of topic
// in turn until stop closes, then waits for the outstanding acknowledgements.
// It returns how many records it sent.
func (l *Ledger) ProduceUntil(cl *kgo.Client, topic string, partitions int32, stop <-chan struct{}) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sent := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			flushCtx, cancelFlush := context.WithTimeout(ctx, 2*time.Minute)
			defer cancelFlush()
			return sent, cl.Flush(flushCtx)
		default:
		}
		r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: []byte(strconv.Itoa(i))}
		cl.Produce(ctx, r, l.Record)
		sent++
		if i%50 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// VerifyExactlyOnce reads the whole topic through clients from newClient and
// fails t unless every acknowledged record is there once, at its acknowledged
// partition and offset, and each partition holds its records in the order
// they were produced.
func (l *Ledger) VerifyExactlyOnce(t testing.TB, topic string, newClient func(...kgo.Opt) *kgo.Client) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := newClient()
	defer admin.Close()
	// Brokers that all restarted at once answer retriable errors until
	// their partitions have elected leaders.
	var ends kadm.ListedOffsets
	var err error
	for {
		ends, err = kadm.NewClient(admin).ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil || !kerr.IsRetriable(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	consumer := newClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer consumer.Close()
	got, err := ConsumeN(ctx, consumer, int(total))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	last := map[int32]int{}
	for _, r := range got {
		v := string(r.Value)
		if seen[v] {
			t.Fatalf("record %s stored twice", v)
		}
		seen[v] = true
		n, err := strconv.Atoi(v)
		if err != nil {
			continue // not this producer's: a test may write beside it
		}
		if prev, ok := last[r.Partition]; ok && n <= prev {
			t.Fatalf("partition %d: record %d stored after %d", r.Partition, n, prev)
		}
		last[r.Partition] = n
		if off, ok := l.acked[v]; ok && (off != r.Offset || l.part[v] != r.Partition) {
			t.Fatalf("record %s acknowledged at %d/%d, stored at %d/%d", v, l.part[v], off, r.Partition, r.Offset)
		}
	}
	var missing []string
	for v := range l.acked {
		if !seen[v] {
			missing = append(missing, v)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("%d acknowledged records lost, e.g. %v", len(missing), missing[:min(10, len(missing))])
	}
	t.Logf("%d records acknowledged, %d stored, %d produce errors", len(l.acked), len(got), l.fails)
}

// ConsumeN polls cl until it has want records or ctx ends.
func ConsumeN(ctx context.Context, cl *kgo.Client, want int) ([]*kgo.Record, error) {
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("consumed %d of %d records before timeout", len(out), want)
		}
		out = append(out, fs.Records()...)
	}
	return out, nil
}
