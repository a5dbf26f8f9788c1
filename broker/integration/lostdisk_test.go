package integration

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// produceAcked produces n records named prefix-i to topic with acks=all
// and idempotence, recording acknowledgements in acks, and fails unless
// every one is acknowledged.
func produceAcked(ctx context.Context, t *testing.T, c *brokertest.Cluster, acks *brokertest.Ledger, topic, prefix string, n int) {
	t.Helper()
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	defer cl.Close()
	before := acks.Acked()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(prefix + "-" + strconv.Itoa(i))}, acks.Record)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := acks.Acked() - before; got != n {
		t.Fatalf("%d of %d records acknowledged", got, n)
	}
}

// waitFullyReplicated waits until every partition of topic has all its
// replicas in sync, as its leader sees them (a replica counts only once
// its broker's current incarnation votes in the group), and broker
// renewed hosts no observer still catching up.
func waitFullyReplicated(t *testing.T, c *brokertest.Cluster, topic string, renewed int) {
	t.Helper()
	// Only the leader knows whether a replica votes: it is asked through
	// a client that has loaded the brokers' addresses.
	cl := c.Client()
	defer cl.Close()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		observers, ok := c.Metric(renewed, "raftka_observer_replicas")
		under := 0.0
		for i := range c.Brokers {
			if c.Running(i) {
				v, _ := c.Metric(i, "raftka_under_replicated_partitions")
				under += v
			}
		}
		if ok && observers == 0 && under == 0 && isrComplete(c, cl, topic) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s not fully replicated on broker %d's new incarnation within 90 s", topic, renewed)
}

func isrComplete(c *brokertest.Cluster, cl *kgo.Client, topic string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := c.Admin().Metadata(ctx, topic)
	if err != nil {
		return false
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		return false
	}
	for _, p := range md.Topics[topic].Partitions {
		if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
			return false
		}
		leaders, _, err := tryMetadataFrom(cl, int(p.Leader), topic)
		if err != nil || leaders[p.Partition].id != p.Leader {
			return false
		}
	}
	return true
}

// TestLostDiskLosesNothingAcknowledged is the scenario that lost every
// acknowledged record before brokers had incarnations: a follower is
// down while 2,000 records are acknowledged by the leader and the other
// follower; then the leader and that follower crash, the follower's disk
// is lost, and the stale follower and the empty one come back. They must
// not elect anyone: the empty one is a new incarnation, which neither
// votes nor acknowledges until the old leader is back and has replaced its
// old replica. The same holds for the metadata group: an offset committed
// and a config set while the stale broker was down survive.
func TestLostDiskLosesNothingAcknowledged(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	min2 := "2"
	c.CreateTopic("ledger", 1, 3, map[string]*string{"min.insync.replicas": &min2})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	leader := c.LeaderOf("ledger", 0)
	stale, emptied := (leader+1)%3, (leader+2)%3

	c.Kill(stale)
	acks := brokertest.NewLedger()
	produceAcked(ctx, t, c, acks, "ledger", "while-stale-down", 2000)
	admin := c.Admin()
	committed := kadm.Offsets{}
	committed.Add(kadm.Offset{Topic: "ledger", Partition: 0, At: 1234, LeaderEpoch: -1})
	if resp, err := admin.CommitOffsets(ctx, "billing", committed); err != nil || resp.Error() != nil {
		t.Fatalf("commit offsets: %v %v", err, resp.Error())
	}
	if resp, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7777777")}}, "ledger"); err != nil || resp[0].Err != nil {
		t.Fatalf("alter config: %v %v", err, resp)
	}

	c.Kill(leader)
	c.Kill(emptied)
	c.LoseDisk(emptied)
	c.Restart(stale)
	c.Restart(emptied)
	// A stale replica and an empty one are no quorum, in either group.
	time.Sleep(4 * time.Second)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(4*time.Second))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("refused")}).FirstErr(); err == nil {
		t.Fatal("a record was acknowledged by a stale replica and an empty one")
	}
	cl.Close()
	if v, ok := c.Metric(stale, "raftka_partitions_without_leader"); !ok || v != 1 {
		t.Errorf("the stale broker reports %v (%v) partitions without a leader, want 1", v, ok)
	}

	c.Restart(leader)
	for i := range c.Brokers {
		c.WaitReady(i)
	}
	waitFullyReplicated(t, c, "ledger", emptied)
	if v, _ := c.Metric(emptied, "raftka_broker_generation"); v != 1 {
		t.Errorf("the broker that lost its disk is generation %v, want 1", v)
	}
	// Its new replica votes, also after a restart (before any snapshot of
	// its own, so it replays its addition and promotion): with the stale
	// broker down, the old leader and it are the quorum.
	c.Kill(emptied)
	c.Restart(emptied)
	c.WaitReady(emptied)
	c.Kill(stale)
	produceAcked(ctx, t, c, acks, "ledger", "after", 200)
	c.Restart(stale)
	c.WaitReady(stale)
	acks.VerifyExactlyOnce(t, "ledger", c.Client)

	// A new client: the shared one's connections to the brokers killed
	// above may be dead, and its next request on one reads EOF.
	admin = kadm.NewClient(c.Client())
	fetched, err := admin.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("ledger", 0); !ok || o.At != 1234 {
		t.Errorf("group billing's committed offset is %+v (%v), want 1234", o, ok)
	}
	configs, err := admin.DescribeTopicConfigs(ctx, "ledger")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := configs.On("ledger", nil); err != nil || configValue(v.Configs, "retention.ms") != "7777777" {
		t.Errorf("ledger's retention.ms after recovery: %q (%v), want 7777777", configValue(v.Configs, "retention.ms"), err)
	}
}

func configValue(configs []kadm.Config, name string) string {
	for _, c := range configs {
		if c.Key == name && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// TestBrokerRestartedEmptyIsReplaced: a broker whose disk is lost while
// the others run comes back as a new incarnation under a produce load;
// the leaders replace its replicas (the old Raft nodes removed, the new
// ones added as observers, caught up and promoted), the partitions are
// fully replicated again, and the new replicas really vote and
// acknowledge: with another broker down, they make the quorum. Nothing
// acknowledged is lost or duplicated. The old data directory, put back
// afterwards, is refused.
func TestBrokerRestartedEmptyIsReplaced(t *testing.T) {
	// Small snapshot intervals: the promoted replicas restart from
	// snapshots of their own.
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, ExtraFlags: []string{"--raft-log-retain-bytes", "65536"}})
	c.CreateTopic("renewed", 3, 3, nil)
	acks := brokertest.NewLedger()
	stop, done := make(chan struct{}), make(chan error, 1)
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	go func() {
		_, err := acks.ProduceUntil(producer, "renewed", 3, stop)
		done <- err
	}()
	waitAcked := func(n int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for acks.Acked() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d records acknowledged, want %d", acks.Acked(), n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitAcked(1000)

	const lost = 2
	c.Kill(lost)
	oldDir := c.Brokers[lost].DataDir + ".old"
	if out, err := exec.Command("cp", "-a", c.Brokers[lost].DataDir, oldDir).CombinedOutput(); err != nil {
		t.Fatalf("copy data directory: %v %s", err, out)
	}
	c.LoseDisk(lost)
	c.Restart(lost)
	c.WaitReady(lost)
	waitFullyReplicated(t, c, "renewed", lost)
	if v, _ := c.Metric(lost, "raftka_broker_generation"); v != 1 {
		t.Errorf("the broker that lost its disk is generation %v, want 1", v)
	}
	changes := 0.0
	for i := range c.Brokers {
		v, _ := c.Metric(i, "raftka_partition_membership_changes_total")
		changes += v
	}
	if changes < 9 { // per partition: remove, add, promote
		t.Errorf("leaders made %v membership changes, want at least 9", changes)
	}

	// The new replicas vote after a restart: with broker 0 down, broker 1
	// and the new incarnation of 2 are each group's quorum.
	restartAndLean := func(down int) {
		t.Helper()
		c.Kill(lost)
		c.Restart(lost)
		c.WaitReady(lost)
		c.Kill(down)
		waitAcked(acks.Acked() + 1000)
		c.Restart(down)
		c.WaitReady(down)
	}
	restartAndLean(0)
	// Again once the promoted replicas took snapshots of their own, which
	// list them as voters: they restart as voters, not observers.
	waitAcked(acks.Acked() + 3000)
	restartAndLean(1)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	producer.Close()
	acks.VerifyExactlyOnce(t, "renewed", c.Client)

	c.Kill(lost)
	c.LoseDisk(lost)
	if err := os.Rename(oldDir, c.Brokers[lost].DataDir); err != nil {
		t.Fatal(err)
	}
	c.Restart(lost)
	if !c.WaitExit(lost, 30*time.Second) {
		t.Fatal("a broker on the data directory of a replaced incarnation kept running")
	}
	if log, _ := os.ReadFile(c.Brokers[lost].LogPath); !strings.Contains(string(log), "which generation 1 replaced") {
		t.Error("the refused broker's log does not say its incarnation was replaced")
	}
}
