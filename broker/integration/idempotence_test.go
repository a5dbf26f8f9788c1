package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

func TestIdempotentProducerSequences(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("payments", 1, 3, nil)
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.ProducerID, init.ProducerEpoch = -1, -1
	pid, err := init.RequestWith(ctx, cl)
	if err != nil || pid.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, pid)
	}
	id, epoch := pid.ProducerID, pid.ProducerEpoch

	first := produceRaw(t, cl, "payments", 0, -1, batch(id, epoch, 0, "a", "b"))
	if first.ErrorCode != 0 || first.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", first)
	}
	second := produceRaw(t, cl, "payments", 0, -1, batch(id, epoch, 2, "c"))
	if second.ErrorCode != 0 || second.BaseOffset != 2 {
		t.Fatalf("second batch: %+v", second)
	}
	// A retry of an already stored batch gets its first offset back and
	// stores nothing.
	retry := produceRaw(t, cl, "payments", 0, -1, batch(id, epoch, 0, "a", "b"))
	if retry.ErrorCode != 0 || retry.BaseOffset != 0 {
		t.Fatalf("retried batch: error %v offset %d, want offset 0", kerr.ErrorForCode(retry.ErrorCode), retry.BaseOffset)
	}
	// A gap in the sequence is refused.
	gap := produceRaw(t, cl, "payments", 0, -1, batch(id, epoch, 7, "x"))
	if gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(gap.ErrorCode))
	}
	// The partition's leader counts both as the signal of a producer's
	// gap or duplicate.
	counted := func(name string) float64 {
		sum := 0.0
		for i := range c.Brokers {
			v, _ := c.Metric(i, name, `topic="payments"`)
			sum += v
		}
		return sum
	}
	if dup, ooo := counted("raftka_produce_duplicate_batches_total"), counted("raftka_produce_out_of_order_sequence_total"); dup != 1 || ooo != 1 {
		t.Fatalf("brokers counted %v duplicate batches and %v out-of-order ones, want 1 and 1", dup, ooo)
	}
	// A new epoch fences the old one.
	bumped := produceRaw(t, cl, "payments", 0, -1, batch(id, epoch+1, 0, "d"))
	if bumped.ErrorCode != 0 || bumped.BaseOffset != 3 {
		t.Fatalf("new epoch: %+v", bumped)
	}
	fenced := produceRaw(t, cl, "payments", 0, -1, batch(id, epoch, 3, "zombie"))
	if fenced.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(fenced.ErrorCode))
	}

	got := consumeAll(t, c, "payments", 4)
	want := []string{"a", "b", "c", "d"}
	if len(got) != len(want) {
		t.Fatalf("stored %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if string(r.Value) != want[i] || r.Offset != int64(i) {
			t.Fatalf("record %d: %q at %d, want %q at %d", i, r.Value, r.Offset, want[i], i)
		}
	}

	// The producer table is replicated: after the leader dies, its successor
	// still recognises the retry...
	c.Kill(c.LeaderOf("payments", 0))
	retry = produceRaw(t, c.Client(), "payments", 0, -1, batch(id, epoch+1, 0, "d"))
	if retry.ErrorCode != 0 || retry.BaseOffset != 3 {
		t.Fatalf("retry on the new leader: error %v offset %d, want offset 3", kerr.ErrorForCode(retry.ErrorCode), retry.BaseOffset)
	}
	// ...and describes the producer as it stands (KIP-664, as
	// kafka-transactions.sh describe-producers asks).
	described, err := kadm.NewClient(c.Client()).DescribeProducers(ctx, kadm.TopicsSet{"payments": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := described["payments"].Partitions[0]
	if p.Err != nil || len(p.ActiveProducers) != 1 {
		t.Fatalf("described %+v", p)
	}
	if ap := p.ActiveProducers[id]; ap.ProducerID != id || ap.ProducerEpoch != epoch+1 || ap.LastSequence != 0 || ap.CurrentTxnStartOffset != -1 {
		t.Fatalf("producer described as %+v, want id %d, epoch %d, last sequence 0", ap, id, epoch+1)
	}
}

// TestIdleProducersAreForgotten runs brokers that forget a producer idle
// for 6 s (longer than every broker's restart takes): the idle one leaves, not before, the partition's producer table (as
// DescribeProducers shows it, also after every broker was killed and
// rebuilt its table from disk) while a busy one stays, its retries still
// deduplicated; the forgotten one may go on with its next sequence.
func TestIdleProducersAreForgotten(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, ExtraFlags: []string{"--producer-id-expiration", "6s", "--producer-id-expiration-check-interval", "250ms"}})
	c.CreateTopic("idle", 1, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	newProducer := func() (int64, int16) {
		t.Helper()
		init := kmsg.NewPtrInitProducerIDRequest()
		init.ProducerID, init.ProducerEpoch = -1, -1
		pid, err := init.RequestWith(ctx, c.Client())
		if err != nil || pid.ErrorCode != 0 {
			t.Fatalf("InitProducerId: %v %v", err, pid)
		}
		return pid.ProducerID, pid.ProducerEpoch
	}
	produce := func(id int64, epoch int16, seq int32, value string) int64 {
		t.Helper()
		r := produceRaw(t, c.Client(), "idle", 0, -1, batch(id, epoch, seq, value))
		if r.ErrorCode != 0 {
			t.Fatalf("producer %d sequence %d: %v", id, seq, kerr.ErrorForCode(r.ErrorCode))
		}
		return r.BaseOffset
	}
	described := func() map[int64]kadm.DescribedProducer {
		t.Helper()
		// Right after the brokers' restart the partition may still be
		// electing its leader, which kadm reports as LEADER_NOT_AVAILABLE
		// without asking again, as a client does.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			d, err := kadm.NewClient(c.Client()).DescribeProducers(ctx, kadm.TopicsSet{"idle": {0: {}}})
			if err == nil {
				err = d["idle"].Partitions[0].Err
			}
			switch {
			case err == nil:
				return d["idle"].Partitions[0].ActiveProducers
			case !errors.Is(err, kerr.LeaderNotAvailable) || time.Now().After(deadline):
				t.Fatal(err)
			}
		}
	}
	idle, idleEpoch := newProducer()
	busy, busyEpoch := newProducer()
	// Expiry counts from the batch's timestamp (milliseconds), taken when
	// it is built: a produce retried while leadership settles is
	// acknowledged later.
	idleSince := time.UnixMilli(time.Now().UnixMilli())
	produce(idle, idleEpoch, 0, "idle-0")
	var seq int32
	var lastOffset int64
	// The busy producer writes every 100 ms until the idle one is gone.
	for began := time.Now(); ; seq++ {
		lastOffset = produce(busy, busyEpoch, seq, "busy")
		if _, ok := described()[idle]; !ok {
			if idleFor := time.Since(idleSince); idleFor < 6*time.Second {
				t.Fatalf("producer %d forgotten after %v idle, before the expiration", idle, idleFor)
			}
			break
		}
		if time.Since(began) > 20*time.Second {
			t.Fatalf("producer %d, idle for 20 s, is still described", idle)
		}
		time.Sleep(100 * time.Millisecond)
	}
	seq++
	c.CrashAll()
	after := described()
	if _, ok := after[idle]; ok {
		t.Fatalf("producer %d is described again after the restart", idle)
	}
	if p, ok := after[busy]; !ok || p.LastSequence != seq-1 {
		t.Fatalf("busy producer described as %+v (%v), want last sequence %d", p, ok, seq-1)
	}
	if retried := produce(busy, busyEpoch, seq-1, "busy"); retried != lastOffset {
		t.Fatalf("retry of the busy producer's last batch got offset %d, want its original %d", retried, lastOffset)
	}
	produce(idle, idleEpoch, 1, "idle-1")
	if p, ok := described()[idle]; !ok || p.LastSequence != 1 {
		t.Fatalf("producer %d after writing again: %+v (%v)", idle, p, ok)
	}
}
