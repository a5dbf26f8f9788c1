package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
)

func produceN(t *testing.T, c *brokertest.Cluster, topic string, n int) {
	t.Helper()
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestGroupConsumersShareTopicAndCommit(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("events", 6, 3, nil)
	const n = 2000
	produceN(t, c, "events", n)

	var mu sync.Mutex
	seen := map[string]int{}
	byMember := map[int]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for m := 0; m < 2; m++ {
		wg.Add(1)
		go func(m int) {
			defer wg.Done()
			cl := c.Client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("events"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
				kgo.Balancers(kgo.CooperativeStickyBalancer()))
			for {
				mu.Lock()
				done := len(seen) >= n
				mu.Unlock()
				if done || ctx.Err() != nil {
					cl.LeaveGroup()
					return
				}
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				fs := cl.PollFetches(pctx)
				pcancel()
				mu.Lock()
				for _, r := range fs.Records() {
					seen[string(r.Value)]++
					byMember[m]++
				}
				mu.Unlock()
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					t.Logf("member %d commit: %v", m, err)
				}
			}
		}(m)
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("the group consumed %d distinct records, want %d", len(seen), n)
	}
	t.Logf("records per member: %v", byMember)

	adm := c.Admin()
	committed, err := adm.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		o, ok := committed.Lookup("events", e.Partition)
		if !ok || o.At != e.Offset {
			t.Errorf("partition %d: committed %v, end %d", e.Partition, o.At, e.Offset)
		}
	})
	groups, err := adm.DescribeGroups(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if st := groups["billing"].State; st != "Empty" {
		t.Errorf("after both members left the group is %s, want Empty", st)
	}
}

func TestCommittedOffsetsSurviveCoordinatorKill(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("audit", 3, 3, nil)
	produceN(t, c, "audit", 30)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	offsets := kadm.Offsets{}
	for p := int32(0); p < 3; p++ {
		offsets.Add(kadm.Offset{Topic: "audit", Partition: p, At: int64(p + 1), LeaderEpoch: -1})
	}
	resp, err := adm.CommitOffsets(ctx, "reporting", offsets)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	coord := adm.FindGroupCoordinators(ctx, "reporting")["reporting"]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	victim := int(coord.NodeID)
	t.Logf("SIGKILL coordinator broker %d", victim)
	c.Kill(victim)

	// A client caches its coordinator; each attempt starts afresh, as a
	// restarted consumer would, until the metadata group elected a leader.
	var fresh *kadm.Client
	deadline := time.Now().Add(30 * time.Second)
	for {
		fresh = kadm.NewClient(c.Client())
		got, err := fresh.FetchOffsets(ctx, "reporting")
		if err == nil {
			for p := int32(0); p < 3; p++ {
				o, ok := got.Lookup("audit", p)
				if !ok || o.At != int64(p+1) {
					t.Fatalf("partition %d: offset %+v after coordinator kill, want %d", p, o, p+1)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fetch offsets from the new coordinator: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if coord2 := fresh.FindGroupCoordinators(ctx, "reporting")["reporting"]; coord2.Err != nil || int(coord2.NodeID) == victim {
		t.Fatalf("coordinator after kill: %+v", coord2)
	}
}

// TestDeleteOffsets: a group's committed offsets can be deleted per
// partition (KIP-496), except for topics its live members consume.
func TestDeleteOffsets(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	c.CreateTopic("old", 2, 1, nil)
	c.CreateTopic("current", 1, 1, nil)
	produceN(t, c, "current", 3)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "old", Partition: 0, At: 5, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "old", Partition: 1, At: 6, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "current", Partition: 0, At: 1, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "billing", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	committed := func() kadm.OffsetResponses {
		t.Helper()
		got, err := adm.FetchOffsets(ctx, "billing")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	deleted, err := adm.DeleteOffsets(ctx, "billing", kadm.TopicsSet{"old": {0: {}}})
	if err != nil || deleted.Error() != nil {
		t.Fatalf("delete old/0: %v %v", err, deleted.Error())
	}
	got := committed()
	if _, ok := got.Lookup("old", 0); ok {
		t.Fatal("old/0 still committed after its deletion")
	}
	if o, ok := got.Lookup("old", 1); !ok || o.At != 6 {
		t.Fatalf("old/1 is %+v, want it kept at 6", o)
	}

	// A live member that consumes "current" keeps that topic's offsets.
	member := c.Client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("current"), kgo.DisableAutoCommit())
	waitFor(t, 30*time.Second, "the member to join", func() bool {
		described, err := adm.DescribeGroups(ctx, "billing")
		return err == nil && described["billing"].State == "Stable"
	})
	deleted, err = adm.DeleteOffsets(ctx, "billing", kadm.TopicsSet{"current": {0: {}}, "old": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if perr, _ := deleted.Lookup("current", 0); !errors.Is(perr, kerr.GroupSubscribedToTopic) {
		t.Fatalf("deleting a consumed topic's offset: %v, want GROUP_SUBSCRIBED_TO_TOPIC", perr)
	}
	if perr, _ := deleted.Lookup("old", 1); perr != nil {
		t.Fatalf("deleting old/1 while the member consumes another topic: %v", perr)
	}
	got = committed()
	if o, ok := got.Lookup("current", 0); !ok || o.At != 1 {
		t.Fatalf("current/0 is %+v, want it kept at 1", o)
	}
	if _, ok := got.Lookup("old", 1); ok {
		t.Fatal("old/1 still committed after its deletion")
	}
	member.Close()

	if _, err := adm.DeleteOffsets(ctx, "nobody", kadm.TopicsSet{"old": {0: {}}}); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("deleting offsets of an unknown group: %v, want GROUP_ID_NOT_FOUND", err)
	}
}

// TestGroupMembershipSurvivesCoordinatorKill: after the coordinator is
// SIGKILLed the next one knows the group as the old one left it, as
// Kafka's loads it from __consumer_offsets: the members keep their ids,
// generation and partitions, and none of them loses its assignment. A
// coordinator that started from nothing answered UNKNOWN_MEMBER_ID, the
// members rejoined as strangers at generation 1, and a cooperative
// assignor then gave a partition to two members at once (issue 39).
func TestGroupMembershipSurvivesCoordinatorKill(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("ledger", 4, 3, nil)
	produceN(t, c, "ledger", 40)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	lost := 0
	member := func() *kgo.Client {
		return c.Client(kgo.ConsumerGroup("ledgers"), kgo.ConsumeTopics("ledger"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { mu.Lock(); lost++; mu.Unlock() }))
	}
	members := []*kgo.Client{member(), member()}
	for _, m := range members {
		go func() {
			for ctx.Err() == nil {
				m.PollFetches(ctx)
			}
		}()
	}
	adm := c.Admin()
	settled := func() (kadm.DescribedGroup, bool) {
		d, err := adm.DescribeGroups(ctx, "ledgers")
		g := d["ledgers"]
		return g, err == nil && g.Err == nil && g.State == "Stable" && len(g.Members) == 2 && len(g.AssignedPartitions()["ledger"]) == 4
	}
	waitFor(t, time.Minute, "the group to settle", func() bool { _, ok := settled(); return ok })
	before := map[string]int32{}
	for _, m := range members {
		id, gen := m.GroupMetadata()
		before[id] = gen
	}
	// The coordinator records a settled group within half a second
	// (package offsetstopic); give it that before the kill.
	time.Sleep(2 * time.Second)
	coord := adm.FindGroupCoordinators(ctx, "ledgers")["ledgers"]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	t.Logf("SIGKILL coordinator broker %d; members %v", coord.NodeID, before)
	c.Kill(int(coord.NodeID))

	// Long enough for the metadata group to elect and for each member to
	// heartbeat the next coordinator several times.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		fresh := kadm.NewClient(c.Client())
		d, err := fresh.DescribeGroups(ctx, "ledgers")
		fresh.Close()
		if g := d["ledgers"]; err == nil && g.Err == nil {
			t.Logf("next coordinator: %s, %d members", g.State, len(g.Members))
		}
	}
	for _, m := range members {
		id, gen := m.GroupMetadata()
		if want, ok := before[id]; !ok || gen != want {
			t.Errorf("a member is %s at generation %d after the coordinator's death; before it: %v", id, gen, before)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if lost > 0 {
		t.Errorf("members lost their partitions %d times after the coordinator's death", lost)
	}
}
