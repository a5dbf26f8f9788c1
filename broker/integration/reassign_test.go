package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
)

// replicasOf returns a partition's replicas as Metadata reports them.
func replicasOf(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, partition int32) []int32 {
	t.Helper()
	// A broker that has just restarted may not know the topic yet: ask
	// until one names the partition.
	var replicas []int32
	waitFor(t, 10*time.Second, "a broker to name "+topic+"'s replicas", func() bool {
		md, err := admin.Metadata(ctx, topic)
		if err != nil || md.Topics[topic].Err != nil {
			return false
		}
		p, ok := md.Topics[topic].Partitions[partition]
		replicas = append([]int32(nil), p.Replicas...)
		return ok
	})
	return replicas
}

// reassign asks for one partition's move (nil target cancels) and
// returns the partition's error.
func reassign(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, partition int32, target []int32) error {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, partition, target)
	resp, err := admin.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp[topic][partition].Err
}

// waitMoved waits until no move of topic runs and partition's replicas
// are want's brokers, with every replica in sync.
func waitMoved(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, partition int32, want []int32) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		moves, err := admin.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {partition: {}}})
		md, merr := admin.Metadata(ctx, topic)
		if err == nil && merr == nil && len(moves[topic]) == 0 {
			p := md.Topics[topic].Partitions[partition]
			if sameSet(p.Replicas, want) && len(p.ISR) == len(want) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s-%d did not reach replicas %v within 90 s: %v", topic, partition, want, replicasOf(ctx, t, admin, topic, partition))
}

func sameSet(a, b []int32) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func outsideOf(replicas []int32, brokers int) []int32 {
	var out []int32
	for id := int32(0); id < int32(brokers); id++ {
		if !slices.Contains(replicas, id) {
			out = append(out, id)
		}
	}
	return out
}

// TestReassignmentMovesReplicasUnderLoad drives Kafka's reassignment API
// as kafka-reassign-partitions.sh does, through kadm, while an idempotent
// acks=all producer writes: bad requests change nothing; a move replaces
// a replica (the preferred leader among those leaving) while a replica
// that stays is SIGKILLed and a throttle slows the copy; a second move of
// the same partition is refused while one runs; a move cancelled halfway
// goes back to the original replicas. Every acknowledged record is read
// back once, at its offset, in order.
func TestReassignmentMovesReplicasUnderLoad(t *testing.T) {
	// Frequent snapshots: new replicas copy the records through follower
	// fetches, which the throttle bounds.
	c := brokertest.Start(t, brokertest.Options{Brokers: 4, ExtraFlags: []string{"--raft-log-retain-bytes", "262144"}})
	min2 := "2"
	c.CreateTopic("moving", 2, 3, map[string]*string{"min.insync.replicas": &min2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := c.Admin()
	orig0, orig1 := replicasOf(ctx, t, admin, "moving", 0), replicasOf(ctx, t, admin, "moving", 1)

	for _, bad := range []struct {
		name      string
		topic     string
		partition int32
		target    []int32
		want      error
	}{
		{"an unknown broker", "moving", 0, []int32{orig0[0], orig0[1], 9}, kerr.InvalidReplicaAssignment},
		{"a broker twice", "moving", 0, []int32{orig0[0], orig0[0], orig0[1]}, kerr.InvalidReplicaAssignment},
		{"no replicas", "moving", 0, []int32{}, kerr.InvalidReplicaAssignment},
		{"fewer replicas than min.insync.replicas", "moving", 0, []int32{orig0[0]}, kerr.InvalidReplicationFactor},
		{"an unknown partition", "moving", 7, []int32{0, 1, 2}, kerr.UnknownTopicOrPartition},
		{"an unknown topic", "absent", 0, []int32{0, 1, 2}, kerr.UnknownTopicOrPartition},
		{"a cancel with no move", "moving", 0, nil, kerr.NoReassignmentInProgress},
	} {
		if err := reassign(ctx, t, admin, bad.topic, bad.partition, bad.target); !errors.Is(err, bad.want) {
			t.Errorf("%s: %v, want %v", bad.name, err, bad.want)
		}
	}
	if got := replicasOf(ctx, t, admin, "moving", 0); !slices.Equal(got, orig0) {
		t.Fatalf("refused moves changed the replicas: %v, were %v", got, orig0)
	}

	acks := brokertest.NewLedger()
	fill := strings.Repeat("x", 1000)
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := 0; i < 4000; i++ {
		producer.Produce(ctx, &kgo.Record{Topic: "moving", Partition: int32(i % 2), Value: []byte(fmt.Sprintf("fill-%d-%s", i, fill))}, acks.Record)
	}
	if err := producer.Flush(ctx); err != nil || acks.Acked() != 4000 {
		t.Fatalf("fill: %v, %d acknowledged", err, acks.Acked())
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := acks.ProduceUntil(producer, "moving", 2, stop)
		done <- err
	}()

	// Partition 0: its preferred leader leaves, a broker outside joins,
	// copying at most 1 MiB/s.
	joining := outsideOf(orig0, 4)[0]
	if resp, err := admin.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: kadm.StringPtr("1048576")}}, joining); err != nil || resp[0].Err != nil {
		t.Fatalf("set the throttle: %v %v", err, resp)
	}
	target0 := []int32{joining, orig0[1], orig0[2]}
	if err := reassign(ctx, t, admin, "moving", 0, target0); err != nil {
		t.Fatal(err)
	}
	if err := reassign(ctx, t, admin, "moving", 0, orig0); !errors.Is(err, kerr.ReassignmentInProgress) {
		t.Errorf("a second move while one runs: %v, want REASSIGNMENT_IN_PROGRESS", err)
	}
	moves, err := admin.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := moves["moving"][0]; !ok || !slices.Equal(m.AddingReplicas, []int32{joining}) || !slices.Equal(m.RemovingReplicas, []int32{orig0[0]}) {
		t.Errorf("the move is listed as %+v (%v), want adding %d and removing %d", m, ok, joining, orig0[0])
	}
	c.Kill(int(orig0[1]))
	time.Sleep(3 * time.Second)
	c.Restart(int(orig0[1]))
	c.WaitReady(int(orig0[1]))
	waitMoved(ctx, t, admin, "moving", 0, target0)

	// Partition 1: a move cancelled halfway, its copy slowed to 64 KiB/s.
	joining1 := outsideOf(orig1, 4)[0]
	if _, err := admin.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: kadm.StringPtr("65536")}}, joining1); err != nil {
		t.Fatal(err)
	}
	if err := reassign(ctx, t, admin, "moving", 1, []int32{orig1[0], orig1[1], joining1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := reassign(ctx, t, admin, "moving", 1, nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	waitMoved(ctx, t, admin, "moving", 1, orig1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, hosts := c.Metric(int(joining1), "raftka_partition_high_watermark", `topic="moving"`, `partition="1"`); !hosts {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker %d still hosts a replica of moving-1 after the cancelled move", joining1)
		}
		time.Sleep(200 * time.Millisecond)
	}

	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	producer.Close()
	acks.VerifyExactlyOnce(t, "moving", c.Client)
}

// TestReassignmentChangesReplicationFactor: 1 to 3 replicas and back to
// 2, and a partition whose every replica moves to other brokers; each
// keeps every record.
func TestReassignmentChangesReplicationFactor(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := c.Admin()
	c.CreateTopic("grow", 1, 1, nil)
	c.CreateTopic("away", 1, 2, nil)
	acks := brokertest.NewLedger()
	produceAcked(ctx, t, c, acks, "grow", "before", 300)
	one := replicasOf(ctx, t, admin, "grow", 0)
	three := append(one, outsideOf(one, 4)[:2]...)
	if err := reassign(ctx, t, admin, "grow", 0, three); err != nil {
		t.Fatal(err)
	}
	waitMoved(ctx, t, admin, "grow", 0, three)
	// With the original replica's broker down, the two new ones hold and
	// serve everything, and the move back to two replicas drops it.
	c.Kill(int(one[0]))
	produceAcked(ctx, t, c, acks, "grow", "three", 300)
	two := three[1:]
	if err := reassign(ctx, t, admin, "grow", 0, two); err != nil {
		t.Fatal(err)
	}
	waitMoved(ctx, t, admin, "grow", 0, two)
	// Back, it finds its replica gone from the metadata and deletes the
	// data it still had.
	c.Restart(int(one[0]))
	c.WaitReady(int(one[0]))
	deadline := time.Now().Add(20 * time.Second)
	for {
		dirs, _ := filepath.Glob(filepath.Join(c.Brokers[one[0]].DataDir, "partitions", "*"))
		hosted, _ := c.Metric(int(one[0]), "raftka_hosted_replicas")
		if len(dirs) == int(hosted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker %d keeps %d partition directories for %v hosted replicas", one[0], len(dirs), hosted)
		}
		time.Sleep(200 * time.Millisecond)
	}
	produceAcked(ctx, t, c, acks, "grow", "two", 300)
	acks.VerifyExactlyOnce(t, "grow", c.Client)

	awayAcks := brokertest.NewLedger()
	produceAcked(ctx, t, c, awayAcks, "away", "before", 300)
	from := replicasOf(ctx, t, admin, "away", 0)
	to := outsideOf(from, 4)
	if err := reassign(ctx, t, admin, "away", 0, to); err != nil {
		t.Fatal(err)
	}
	waitMoved(ctx, t, admin, "away", 0, to)
	for _, id := range from {
		c.Kill(int(id))
	}
	produceAcked(ctx, t, c, awayAcks, "away", "after", 300)
	awayAcks.VerifyExactlyOnce(t, "away", c.Client)
	for _, id := range from {
		c.Restart(int(id))
	}
	for _, id := range from {
		c.WaitReady(int(id))
	}
}
