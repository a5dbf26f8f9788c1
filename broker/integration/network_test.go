package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestIsolatedLeaderLosesNothingAcknowledged cuts the leader of partition 0
// off from the other brokers, not from its clients, for 8 s while an
// acks=all producer writes every partition (a network partition, as in
// Jepsen's tests; the brokers run in network namespaces of their own).
//
//   - The cut-off leader must not acknowledge a write it cannot replicate:
//     what it acknowledges to a producer writing to it directly must be in
//     the log at the acknowledged offset afterwards.
//   - It must not serve a record the others do not keep: every batch that a
//     consumer fetches from it during the cut is in the final log with the
//     same offset and checksum.
//   - The two others elect a new leader for partition 0, and the producer's
//     records to it are acknowledged during the cut.
//   - After the cut mends, every acknowledged record is stored once, in
//     order, also after all brokers die at once and come back.
func TestIsolatedLeaderLosesNothingAcknowledged(t *testing.T) {
	if brokertest.RerunInUserNamespace(t) {
		return
	}
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, Namespaces: true})
	idle := idleTopic(t, c, "idle", 24)
	min2 := "2"
	c.CreateTopic("cut", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topics, err := c.Admin().ListTopics(ctx, "cut")
	if err != nil {
		t.Fatal(err)
	}
	topicID := topics["cut"].ID
	// A client that knows every broker, to send requests to one of them.
	direct := brokerClient(ctx, t, c)

	var victim int
	var acksByVictim []acked // to writes sent straight to it during the cut
	servedByVictim := map[int64]int32{}
	var resumedAfter time.Duration
	// franz-go refreshes metadata at most every 5 s by default; with 250 ms
	// it looks for the new leader as soon as the cut-off one refuses.
	produceThroughKills(t, c, "cut", franzGoProducer(c, kgo.MetadataMinAge(250*time.Millisecond)), func(acks *brokertest.Ledger) {
		time.Sleep(2 * time.Second)
		// The leader balancer may still move the leadership to the
		// preferred replica just after the topic's creation: ask again
		// until the leader named answers as one.
		var fetchedBefore int64
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			victim = c.LeaderOf("cut", 0)
			var err error
			if _, fetchedBefore, err = fetchBatches(ctx, direct, int32(victim), "cut", topicID, 0, false); err == nil {
				break
			} else if !errors.Is(err, kerr.NotLeaderForPartition) || time.Now().After(deadline) {
				t.Fatalf("fetch from broker %d before the cut: %v", victim, err)
			}
		}
		t.Logf("cutting broker %d, leader of partition 0 at offset %d, off from the other brokers", victim, fetchedBefore)
		before, _ := metadataFrom(t, direct, victim, "cut")
		c.Isolate(victim)
		cutAt := time.Now()

		// Writes and reads straight to the cut-off broker while the cut
		// lasts, beside the producer.
		done := make(chan struct{})
		go func() {
			defer close(done)
			next := fetchedBefore
			for seq := 0; time.Since(cutAt) < 8*time.Second; seq++ {
				if a, ok := produceTo(ctx, direct, int32(victim), topicID, fmt.Sprintf("direct-%d", seq)); ok {
					acksByVictim = append(acksByVictim, a)
				}
				if got, n, err := fetchBatches(ctx, direct, int32(victim), "cut", topicID, next, false); err == nil {
					for off, crc := range got {
						servedByVictim[off] = crc
					}
					next = n
				}
			}
		}()
		resumedAfter = awaitNewLeaderAcks(acks, 0, cutAt, 8*time.Second)
		<-done
		majority, _ := metadataFrom(t, direct, (victim+1)%3, "cut")
		if leader := majority[0].id; leader == int32(victim) || leader < 0 {
			t.Errorf("after 8 s cut off, broker %d is still partition 0's leader for the others (leader %d)", victim, leader)
		}
		// The cut-off broker must not draw clients away from the leaders
		// the others have: it names itself the leader of no partition;
		// where it led last it names none, so that clients look for the
		// new leader elsewhere; it refuses writes to partitions another
		// broker led with NOT_LEADER_OR_FOLLOWER, after which clients look
		// again; and it lists the brokers it names, as a client drops a
		// broker missing from a Metadata answer.
		seen, listed := metadataFrom(t, direct, victim, "cut")
		for p, l := range seen {
			switch {
			case l.id == int32(victim):
				t.Errorf("the cut-off broker %d names itself the leader of partition %d; broker %d leads it", victim, p, majority[p].id)
			case before[p].id == int32(victim) && (l.id != -1 || l.code != kerr.LeaderNotAvailable.Code):
				t.Errorf("the cut-off broker answers for partition %d, which it led before the cut, with leader %d and error %v, want none with LEADER_NOT_AVAILABLE", p, l.id, kerr.ErrorForCode(l.code))
			case l.id >= 0 && !listed[l.id]:
				t.Errorf("the cut-off broker names broker %d the leader of partition %d but does not list it", l.id, p)
			}
			if before[p].id != int32(victim) {
				if code := produceCode(ctx, direct, victim, topicID, p); code != kerr.NotLeaderForPartition.Code {
					t.Errorf("the cut-off broker answers a write to partition %d, led by broker %d, with %v", p, majority[p].id, kerr.ErrorForCode(code))
				}
			}
		}
		c.Heal()
		t.Logf("mended after %v; the cut-off broker acknowledged %d direct writes and served %d batches; the producer had partition 0 acknowledged again %v after the cut",
			time.Since(cutAt).Round(time.Millisecond), len(acksByVictim), len(servedByVictim), resumedAfter.Round(time.Millisecond))
	})
	// How soon is timing, and timing is the benchmark's; the test requires
	// only that the producer moved to the new leader while the cut lasted.
	if resumedAfter == 0 {
		t.Error("the producer had nothing acknowledged on partition 0 while its old leader was cut off")
	}

	// The final log, from partition 0's leader once the brokers that all
	// died at once have chosen one.
	var finalLog map[int64]int32
	waitFor(t, 30*time.Second, "the final log of partition 0", func() bool {
		finalLog, _, err = fetchBatches(ctx, direct, int32(c.LeaderOf("cut", 0)), "cut", topicID, 0, false)
		return err == nil
	})
	for off, crc := range servedByVictim {
		if final, ok := finalLog[off]; !ok || final != crc {
			t.Errorf("the cut-off broker served a batch at offset %d (crc %08x) that the log does not keep (%08x, %v)", off, crc, final, ok)
		}
	}
	for _, a := range acksByVictim {
		if _, ok := finalLog[a.offset]; !ok {
			t.Errorf("the cut-off broker acknowledged %s at offset %d, which the log does not keep", a.value, a.offset)
		}
	}
	idle()
}

type acked struct {
	value  string
	offset int64
}

// TestLibrdkafkaProducerThroughANetworkPartition cuts the leader of
// partition 0 off from the other brokers while librdkafka's idempotent
// producer writes: it must find the new leader while the cut lasts, and
// every acknowledged record is stored once, in order. librdkafka asks one
// broker for the leader when told NOT_LEADER_OR_FOLLOWER, often the
// cut-off one; it found the new leader only because that broker names no
// leader where it led last (metadataTopic).
func TestLibrdkafkaProducerThroughANetworkPartition(t *testing.T) {
	if brokertest.RerunInUserNamespace(t) {
		return
	}
	dir := confluentKafkaDir(t)
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, Namespaces: true})
	min2 := "2"
	c.CreateTopic("librdkafka-cut", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	const cut = 8 * time.Second
	var resumedAfter time.Duration
	produceThroughKills(t, c, "librdkafka-cut", librdkafkaLedgerProducer(c, dir), func(acks *brokertest.Ledger) {
		time.Sleep(2 * time.Second)
		victim := c.LeaderOf("librdkafka-cut", 0)
		c.Isolate(victim)
		cutAt := time.Now()
		resumedAfter = awaitNewLeaderAcks(acks, 0, cutAt, cut)
		time.Sleep(cut - time.Since(cutAt))
		c.Heal()
		t.Logf("cut broker %d, leader of partition 0, off for %v: librdkafka had partition 0 acknowledged again %v after the cut",
			victim, cut, resumedAfter.Round(time.Millisecond))
	})
	if resumedAfter == 0 {
		t.Error("librdkafka had nothing acknowledged on partition 0 while its old leader was cut off")
	}
}

// TestCutOffCoordinatorHandsTheGroupOver cuts the group coordinator (the
// metadata group's leader) off from the other brokers while a consumer
// group reads and commits by hand: the group goes on with the coordinator
// the others elect while the cut lasts, every record is read, and no
// acknowledged commit is lost once the cut mends.
func TestCutOffCoordinatorHandsTheGroupOver(t *testing.T) {
	if brokertest.RerunInUserNamespace(t) {
		return
	}
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, Namespaces: true})
	c.CreateTopic("ledgered", 3, 3, nil)
	const records = 3000
	produceN(t, c, "ledgered", records)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	consumer := c.Client(kgo.ConsumerGroup("cut-group"), kgo.ConsumeTopics("ledgered"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(250*time.Millisecond))

	seen := map[string]bool{}
	committed := map[int32]int64{} // the highest commit the coordinator acknowledged
	var cutAt, mendedAt time.Time
	victim := -1
	commitsDuringCut := 0
	for len(seen) < records && ctx.Err() == nil {
		fetches := consumer.PollRecords(ctx, 20)
		recs := fetches.Records()
		for _, r := range recs {
			seen[string(r.Value)] = true
		}
		if len(recs) > 0 {
			if err := consumer.CommitRecords(ctx, recs...); err == nil {
				for _, r := range recs {
					committed[r.Partition] = max(committed[r.Partition], r.Offset+1)
				}
				if !cutAt.IsZero() && mendedAt.IsZero() {
					commitsDuringCut++
					if commitsDuringCut == 1 {
						t.Logf("the first commit after the cut was acknowledged %v after it", time.Since(cutAt).Round(time.Millisecond))
					}
				}
			}
		}
		switch {
		case victim < 0 && len(committed) > 0:
			coord := c.Admin().FindGroupCoordinators(ctx, "cut-group")["cut-group"]
			if coord.Err != nil {
				t.Fatal(coord.Err)
			}
			victim, cutAt = int(coord.NodeID), time.Now()
			t.Logf("cutting the coordinator, broker %d, off from the other brokers after %d records", victim, len(seen))
			c.Isolate(victim)
		case mendedAt.IsZero() && victim >= 0 && time.Since(cutAt) > 8*time.Second:
			c.Heal()
			mendedAt = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	if mendedAt.IsZero() {
		c.Heal()
	}
	if len(seen) != records {
		t.Fatalf("the group read %d of %d records", len(seen), records)
	}
	t.Logf("%d commits acknowledged while the coordinator was cut off", commitsDuringCut)
	if commitsDuringCut == 0 {
		t.Error("the group committed nothing while its coordinator was cut off")
	}
	consumer.Close()

	var stored kadm.OffsetResponses
	waitFor(t, 30*time.Second, "the group's committed offsets", func() bool {
		var err error
		stored, err = kadm.NewClient(c.Client()).FetchOffsets(ctx, "cut-group")
		return err == nil
	})
	for p, at := range committed {
		if o, _ := stored.Lookup("ledgered", p); o.At < at {
			t.Errorf("partition %d: commit of %d acknowledged, %d stored", p, at, o.At)
		}
	}
}

// awaitNewLeaderAcks waits until a partition has acknowledgements from the
// leader elected after a cut at cutAt, and returns how long after the cut
// they came, or 0 if none came within window. The cut-off leader
// acknowledges what it committed before the cut within milliseconds, so
// acknowledgements after the first second come from a new leader.
func awaitNewLeaderAcks(acks *brokertest.Ledger, partition int32, cutAt time.Time, window time.Duration) time.Duration {
	time.Sleep(time.Until(cutAt.Add(time.Second)))
	before := acks.AckedOn(partition)
	for time.Since(cutAt) < window {
		time.Sleep(20 * time.Millisecond)
		if acks.AckedOn(partition) > before {
			return time.Since(cutAt)
		}
	}
	return 0
}

// partitionLeader is a leader and its epoch in a Metadata answer.
// produceTo sends one acks=all batch with value to partition 0 of the topic
// on broker id, and reports the offset if the broker acknowledged it.
func produceTo(ctx context.Context, cl *kgo.Client, id int32, topicID [16]byte, value string) (acked, bool) {
	p, err := produceOne(ctx, cl, int(id), topicID, 0, value)
	return acked{value: value, offset: p.BaseOffset}, err == nil && p.ErrorCode == 0
}

// produceCode is broker id's answer to an acks=all write to a partition of
// the topic, or -1 if it gave none.
func produceCode(ctx context.Context, cl *kgo.Client, id int, topicID [16]byte, partition int32) int16 {
	p, err := produceOne(ctx, cl, id, topicID, partition, "probe")
	if err != nil {
		return -1
	}
	return p.ErrorCode
}

func produceOne(ctx context.Context, cl *kgo.Client, id int, topicID [16]byte, partition int32, value string) (kmsg.ProduceResponseTopicPartition, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := produceRequest("cut", topicID, partition, -1, batch(-1, -1, -1, value))
	req.TimeoutMillis = 2000
	resp, err := cl.Broker(id).Request(ctx, req)
	if err != nil {
		return kmsg.ProduceResponseTopicPartition{}, err
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0], nil
}
