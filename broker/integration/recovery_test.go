package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/brokertest"
)

// forceRecovery asks for an unclean election of topic's partition 0, as
// kafka-leader-election.sh --election-type unclean does.
func forceRecovery(ctx context.Context, t *testing.T, c *brokertest.Cluster, topic string) kadm.ElectLeadersResult {
	t.Helper()
	res, err := c.Admin().ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	return res[topic][0]
}

// TestForcedRecoveryFromTheLastIntactReplica: a partition whose group
// lost two of its three replicas' disks elects no one; a forced recovery
// (unclean election) restarts it from the replica that kept its data,
// reports what it kept, and the lost replicas' brokers join the group
// anew: every acknowledged record is there, the partition is fully
// replicated again and takes writes. The recovery is refused while the
// partition has a leader, and while a quorum of its replicas kept their
// data though their brokers are down; neither refusal changes anything.
func TestForcedRecoveryFromTheLastIntactReplica(t *testing.T) {
	// The metadata group's voters are brokers 0-2; the partition lives on
	// 1-3, so the metadata group keeps its quorum when 1 and 3 lose their
	// disks.
	c := brokertest.Start(t, brokertest.Options{Brokers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c.CreateTopicOn("rescued", [][]int32{{1, 2, 3}})
	acks := brokertest.NewLedger()
	produceAcked(ctx, t, c, acks, "rescued", "before", 300)
	// The third replica holds what the other two acknowledged.
	for _, id := range []int{1, 2, 3} {
		waitFor(t, 30*time.Second, fmt.Sprintf("broker %d's replica at offset 300", id), func() bool {
			v, _ := c.Metric(id, "raftka_partition_high_watermark", `topic="rescued"`, `partition="0"`)
			return v == 300
		})
	}

	if r := forceRecovery(ctx, t, c, "rescued"); !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("forced recovery of a partition with a leader: %v %q", r.Err, r.ErrMessage)
	}
	c.Kill(1)
	c.Kill(3)
	// Until the survivor's leadership lapses the answer is that none is
	// needed; a refusal changes nothing, so asking again is harmless.
	r := forceRecovery(ctx, t, c, "rescued")
	for deadline := time.Now().Add(30 * time.Second); errors.Is(r.Err, kerr.ElectionNotNeeded) && time.Now().Before(deadline); r = forceRecovery(ctx, t, c, "rescued") {
		time.Sleep(200 * time.Millisecond)
	}
	if !errors.Is(r.Err, kerr.InvalidRequest) || !strings.Contains(r.ErrMessage, "quorum") {
		t.Fatalf("forced recovery with a quorum of intact replicas down: %v %q", r.Err, r.ErrMessage)
	}

	c.LoseDisk(1)
	c.LoseDisk(3)
	c.Restart(1)
	c.Restart(3)
	for i, was := range map[int]float64{1: 0, 3: 1} { // 3 joined as a non-voter, never generation 0
		deadline := time.Now().Add(30 * time.Second)
		for v, _ := c.Metric(i, "raftka_broker_generation"); v != was+1; v, _ = c.Metric(i, "raftka_broker_generation") {
			if time.Now().After(deadline) {
				t.Fatalf("broker %d did not join as a new incarnation", i)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitFor(t, 30*time.Second, "the surviving replica's broker to report 1 partition without a leader", func() bool {
		v, _ := c.Metric(2, "raftka_partitions_without_leader")
		return v == 1
	})
	r = forceRecovery(ctx, t, c, "rescued")
	if r.Err != nil || !strings.Contains(r.ErrMessage, "recovered from broker 2") || !strings.Contains(r.ErrMessage, "below offset 300") {
		t.Fatalf("forced recovery: %v %q", r.Err, r.ErrMessage)
	}
	t.Logf("report: %s", r.ErrMessage)
	if r := forceRecovery(ctx, t, c, "rescued"); !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Errorf("a second forced recovery: %v %q", r.Err, r.ErrMessage)
	}
	waitFullyReplicated(t, c, "rescued", 1)
	waitFullyReplicated(t, c, "rescued", 3)
	if got := replicasOf(ctx, t, c.Admin(), "rescued", 0); !sameSet(got, []int32{1, 2, 3}) {
		t.Errorf("replicas after the recovery: %v, want 1, 2 and 3", got)
	}
	// The recovered group's voters are the new replicas: with the
	// survivor down, they are the quorum.
	c.Kill(2)
	produceAcked(ctx, t, c, acks, "rescued", "after", 200)
	c.Restart(2)
	c.WaitReady(2)
	acks.VerifyExactlyOnce(t, "rescued", c.Client)
}
