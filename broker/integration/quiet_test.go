package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/broker/replica"
)

// quietAfter is how long a partition group of the brokers' default --rtt
// idles before it goes quiet, and a second more for its followers to
// follow its leader.
var quietAfter = replica.QuietAfter(replica.DefaultRTT) + time.Second

// idleTopic creates a topic of n partitions, RF 3, beside a chaos test's
// busy one, writes one acknowledged record to each, and waits until its
// groups went quiet: most groups of a real cluster are idle, and a quiet
// group heartbeats no more, so that a dead, paused or cut-off leader is
// noticed only by what the brokers do about it (replica.quietGroups).
// The check it returns, run after the faults, requires every partition to
// hold its record still and to take a new one within a minute.
func idleTopic(t *testing.T, c *brokertest.Cluster, topic string, n int32) (check func()) {
	t.Helper()
	c.CreateTopic(topic, n, 3, nil)
	produce := func(what string) time.Duration {
		t.Helper()
		start := time.Now()
		cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.MetadataMinAge(250*time.Millisecond), kgo.RequestTimeoutOverhead(2*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		recs := make([]*kgo.Record, n)
		for p := range recs {
			recs[p] = &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("%s %d", what, p))}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to every partition of the idle topic %s (%s): %v", topic, what, err)
		}
		return time.Since(start)
	}
	// The leadership of a new topic moves to each partition's preferred
	// replica within seconds, which is activity: the groups idle from then.
	waitFor(t, time.Minute, "the idle topic's preferred leaders", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		md, err := c.Admin().Metadata(ctx, topic)
		if err != nil || len(md.Topics[topic].Partitions) != int(n) {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	})
	produce("before")
	time.Sleep(quietAfter)
	return func() {
		t.Helper()
		took := produce("after")
		t.Logf("every partition of the idle topic %s took a record, in %v", topic, took)
		got := map[int32][]string{}
		for _, r := range consumeAll(t, c, topic, int(2*n)) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
		}
		for p := range n {
			want := []string{fmt.Sprintf("before %d", p), fmt.Sprintf("after %d", p)}
			if fmt.Sprint(got[p]) != fmt.Sprint(want) {
				t.Errorf("idle partition %d holds %q, want %q", p, got[p], want)
			}
		}
	}
}

// TestQuietGroupIsLedAgainWhenItsLeaderDies: the leader of quiet partition
// groups is SIGKILLed, and a producer that then writes to each of them is
// acknowledged. No heartbeat would have told the quiet followers; the
// brokers that lost a peer wake the groups it led (the benchmarks time
// it).
func TestQuietGroupIsLedAgainWhenItsLeaderDies(t *testing.T) {
	quietLeaderFails(t, "SIGKILL", (*brokertest.Cluster).Kill, func(c *brokertest.Cluster, victim int) {
		c.Restart(victim)
		c.WaitReady(victim)
	})
}

// TestQuietGroupIsLedAgainWhenItsLeaderStalls: as above with the leader
// paused (SIGSTOP), whose kernel still takes connections: the liveness
// probe asks Dragonboat's transport for an answer, which a stopped
// process cannot give.
func TestQuietGroupIsLedAgainWhenItsLeaderStalls(t *testing.T) {
	quietLeaderFails(t, "SIGSTOP", (*brokertest.Cluster).Pause, (*brokertest.Cluster).Resume)
}

// quietLeaderFails runs fault on the leader of a quiet partition, requires
// every partition of its topic to take a record, then runs heal.
func quietLeaderFails(t *testing.T, name string, fault func(*brokertest.Cluster, int), heal func(*brokertest.Cluster, int)) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	check := idleTopic(t, c, "quiet", 6)
	victim := c.LeaderOf("quiet", 0)
	t.Logf("%s broker %d, leader of quiet partition 0", name, victim)
	fault(c, victim)
	check()
	heal(c, victim)
}
