package meta

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/raftka/raftka/broker/growth"
)

// Ordered growth counts the groups that committed on a topic lately: a
// commit keeps the time the coordinator proposed, snapshots keep it, and
// GroupsCommittedOn asks by topic and time.
func TestGroupsCommittedOnCountByTopicAndTime(t *testing.T) {
	s := clusterOf(3)
	commit := func(index uint64, group, topic string, at int64) {
		s.Apply(index, &Command{CommitOffsets: &CommitOffsets{Group: group,
			Offsets: map[string]map[int32]GroupOffset{topic: {0: {Offset: 5, CommittedAt: at}}}}})
	}
	commit(10, "old", "orders", 1_000)
	commit(11, "recent", "orders", 9_000)
	commit(12, "elsewhere", "payments", 9_500)
	commit(13, "legacy", "orders", 0) // a commit from before times were recorded
	if got, want := s.GroupsCommittedOn("orders", 5_000), []string{"recent"}; !slices.Equal(got, want) {
		t.Fatalf("groups since 5000 = %v, want %v", got, want)
	}
	if got, want := s.GroupsCommittedOn("orders", 0), []string{"legacy", "old", "recent"}; !slices.Equal(got, want) {
		t.Fatalf("groups since 0 = %v, want %v", got, want)
	}
	commit(14, "old", "orders", 10_000) // committing again makes a group recent
	if got, want := s.GroupsCommittedOn("orders", 5_000), []string{"old", "recent"}; !slices.Equal(got, want) {
		t.Fatalf("groups since 5000 after a new commit = %v, want %v", got, want)
	}

	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back := NewState()
	if err := json.Unmarshal(data, back); err != nil {
		t.Fatal(err)
	}
	if o, _ := back.GroupOffset("recent", "orders", 0); o.CommittedAt != 9_000 {
		t.Fatalf("commit time after a snapshot = %d, want 9000", o.CommittedAt)
	}
}

// An ordered growth hides the new partitions until every old partition's
// split is in, then holds consumers at the splits and the new partitions
// at 0; stacked growths lift in order, and the holds go with them.
func TestOrderedGrowthIsHiddenUntilSplitThenHeldUntilLifted(t *testing.T) {
	s := clusterOf(3)
	s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "orders", Partitions: 2, ReplicationFactor: 3}})
	grow := func(index uint64, count int32) Outcome {
		return s.Apply(index, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "orders", Count: count, Ordered: true, At: 1_000}})
	}
	split := func(index uint64, seq int, p int32, offset int64) {
		if out := s.Apply(index, &Command{RecordSplit: &RecordSplit{Topic: "orders", Seq: seq, Partition: p, Offset: offset, At: 2_000}}); out.Err != nil {
			t.Fatalf("split %d of growth %d: %v", p, seq, out.Err)
		}
	}
	if out := grow(11, 3); out.Err != nil {
		t.Fatal(out.Err)
	}
	topic := s.Topic("orders")
	if got := topic.VisiblePartitions(); got != 2 {
		t.Fatalf("visible while hidden = %d, want 2", got)
	}
	if out := grow(12, 3); out.Err != nil {
		t.Fatalf("the same growth asked again while hidden: %v", out.Err)
	}
	if _, held := topic.Hold(0); held {
		t.Fatal("a hidden growth holds consumers")
	}
	split(13, 1, 0, 40)
	split(14, 1, 0, 99) // a later report of the same partition does not move the split
	if topic.VisiblePartitions() != 2 {
		t.Fatal("visible before every split was in")
	}
	split(15, 1, 1, 7)
	if got := topic.VisiblePartitions(); got != 3 {
		t.Fatalf("visible after the splits = %d, want 3", got)
	}
	for p, want := range []int64{40, 7, 0} {
		if hold, held := topic.Hold(int32(p)); !held || hold != want {
			t.Fatalf("hold of %d = %d %v, want %d", p, hold, held, want)
		}
	}
	if out := grow(16, 4); out.Err != nil { // a second growth stacks
		t.Fatal(out.Err)
	}
	if got := topic.VisiblePartitions(); got != 3 {
		t.Fatalf("visible with the second growth hidden = %d, want 3", got)
	}
	split(17, 2, 0, 50)
	split(18, 2, 1, 9)
	split(19, 2, 2, 5)
	if hold, _ := topic.Hold(0); hold != 40 {
		t.Fatalf("stacked hold of 0 = %d, want the first growth's 40", hold)
	}
	if out := s.Apply(20, &Command{LiftGrowth: &LiftGrowth{Topic: "orders", Seq: 2, Reason: "drained", At: 3_000}}); out.Err == nil {
		t.Fatal("the second growth lifted before the first")
	}
	s.Apply(21, &Command{LiftGrowth: &LiftGrowth{Topic: "orders", Seq: 1, Reason: "bound", At: 3_000}})
	for p, want := range []int64{50, 9, 5, 0} {
		if hold, held := topic.Hold(int32(p)); !held || hold != want {
			t.Fatalf("hold of %d after the first lift = %d %v, want %d", p, hold, held, want)
		}
	}
	if topic.ForcedLifts != 1 || topic.LastLift.HeldMs != 1_000 {
		t.Fatalf("lift record = %d forced, %+v", topic.ForcedLifts, topic.LastLift)
	}
	s.Apply(22, &Command{LiftGrowth: &LiftGrowth{Topic: "orders", Seq: 2, Reason: "drained", At: 4_000}})
	if _, held := topic.Hold(0); held {
		t.Fatal("held after every growth lifted")
	}
	if !s.StartsGrownPartition("g", "orders", 3) {
		s.Apply(23, &Command{CommitOffsets: &CommitOffsets{Group: "g", Offsets: map[string]map[int32]GroupOffset{"orders": {0: {Offset: 1}}}}})
	}
	if !s.StartsGrownPartition("g", "orders", 3) || s.StartsGrownPartition("g", "orders", 1) || s.StartsGrownPartition("other", "orders", 3) {
		t.Fatal("only a consuming group starts a grown partition at its log start")
	}
}

// A CreatePartitions from before ordered growth replays as it was applied.
func TestUnorderedGrowthShowsItsPartitionsAtOnce(t *testing.T) {
	s := clusterOf(3)
	s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "orders", Partitions: 2, ReplicationFactor: 3}})
	s.Apply(11, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "orders", Count: 3}})
	topic := s.Topic("orders")
	if topic.VisiblePartitions() != 3 || len(topic.Growths) != 0 {
		t.Fatalf("visible %d, growths %v", topic.VisiblePartitions(), topic.Growths)
	}
	if out := s.Apply(12, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "orders", Count: 3}}); out.Err == nil {
		t.Fatal("growing to the count it has was accepted")
	}
}

// The leader's classification raises an old partition's hold until the
// first record that moved in, and its release past every stale record,
// also those behind the hold; reports only move forward.
func TestAdvanceHoldStopsAtTheFirstRecordThatMovedIn(t *testing.T) {
	s := clusterOf(3)
	s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "orders", Partitions: 1, ReplicationFactor: 3}})
	s.Apply(11, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "orders", Count: 2, Ordered: true, At: 1_000}})
	s.Apply(12, &Command{RecordSplit: &RecordSplit{Topic: "orders", Seq: 1, Partition: 0, Offset: 10, At: 2_000}})
	topic := s.Topic("orders")
	advance := func(index uint64, scanned, movedIn, release, at int64) Outcome {
		return s.Apply(index, &Command{AdvanceHold: &AdvanceHold{Topic: "orders", Seq: 1, Partition: 0, Scanned: scanned, MovedIn: movedIn, Release: release, StaleAt: at}})
	}
	expect := func(when string, hold, release int64) {
		t.Helper()
		g := topic.Growths[0]
		if got, _ := topic.Hold(0); got != hold || g.Releases[0] != release {
			t.Fatalf("%s: hold %d, release %d; want %d, %d", when, got, g.Releases[0], hold, release)
		}
	}
	expect("at the split", 10, 10)
	advance(13, 20, -1, 15, 2_500)
	expect("after stale records", 20, 15)
	advance(14, 30, 24, 0, 0)
	expect("after a record moved in", 24, 15)
	advance(15, 40, 35, 38, 3_000) // a stale record behind the hold
	expect("after a later stale record", 24, 38)
	if out := advance(16, 35, -1, 0, 0); out.Err == nil {
		t.Fatal("a report from before the last one was taken")
	}
	if g := topic.Growths[0]; g.LastStaleAt != 3_000 || g.Scanned[0] != 40 {
		t.Fatalf("last stale at %d, scanned %d", g.LastStaleAt, g.Scanned[0])
	}
}

// A leader's report of what is delivered below a release lowers it, for
// that release only: a report for another release is refused, and a
// release that rises waits for a report of its own.
func TestRecordDeliveredLowersTheRelease(t *testing.T) {
	s := clusterOf(3)
	s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "orders", Partitions: 2, ReplicationFactor: 3}})
	s.Apply(11, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "orders", Count: 3, Ordered: true, At: 1_000}})
	deliver := func(index uint64, release, offset int64) Outcome {
		return s.Apply(index, &Command{RecordDelivered: &RecordDelivered{Topic: "orders", Seq: 1, Partition: 0, Release: release, Offset: offset}})
	}
	if out := deliver(12, -1, 0); out.Err == nil {
		t.Fatal("a report before the split was taken")
	}
	s.Apply(13, &Command{RecordSplit: &RecordSplit{Topic: "orders", Seq: 1, Partition: 0, Offset: 10, At: 2_000}})
	s.Apply(14, &Command{RecordSplit: &RecordSplit{Topic: "orders", Seq: 1, Partition: 1, Offset: 20, At: 2_000}})
	topic := s.Topic("orders")
	expect := func(when string, want ...int64) {
		t.Helper()
		if got := topic.Growths[0].Rule().Releases; !slices.Equal(got, want) {
			t.Fatalf("%s: releases %v, want %v", when, got, want)
		}
	}
	expect("at the splits", 10, 20)
	for _, bad := range [][2]int64{{9, 8}, {10, 11}, {10, -1}} {
		if out := deliver(15, bad[0], bad[1]); out.Err == nil {
			t.Fatalf("release %d, delivered %d was taken", bad[0], bad[1])
		}
	}
	deliver(16, 10, 7)
	deliver(17, 10, 9) // the first report stands
	expect("delivered to 7", 7, 20)
	if g := topic.Growths[0]; g.Releases[0] != 10 {
		t.Fatalf("the recorded release moved to %d", g.Releases[0])
	}
	s.Apply(18, &Command{AdvanceHold: &AdvanceHold{Topic: "orders", Seq: 1, Partition: 0, Scanned: 15, MovedIn: -1, Release: 13, StaleAt: 2_500}})
	expect("after a stale record", 13, 20)
	deliver(19, 13, 13)
	expect("delivered to the release", 13, 20)
}

// A group noted as subscribed during a growth counts as consuming the
// topic before its first commit: the first note stands, a note of a
// growth that is not there is refused, and the group starts a grown
// partition at its log start while the growth is in progress.
func TestNoteGroupsRecordsSubscribedGroupsOfAGrowth(t *testing.T) {
	s := clusterOf(3)
	s.Apply(10, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "orders", Partitions: 1, ReplicationFactor: 3}})
	s.Apply(11, &Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: "orders", Count: 2, Ordered: true, At: 1_000}})
	note := func(index uint64, seq int, at int64, groups ...string) Outcome {
		return s.Apply(index, &Command{NoteGroups: &NoteGroups{Topic: "orders", Seq: seq, Groups: groups, At: at}})
	}
	if s.StartsGrownPartition("fresh", "orders", 1) {
		t.Fatal("a group neither noted nor committed starts a grown partition at its log start")
	}
	if out := note(12, 1, 1_500, "fresh"); out.Err != nil {
		t.Fatal(out.Err)
	}
	if out := note(13, 1, 1_900, "fresh", "late"); out.Err != nil {
		t.Fatal(out.Err)
	}
	if out := note(14, 7, 2_000, "ghost"); out.Err == nil {
		t.Fatal("a note of a growth that is not there was taken")
	}
	g := s.Topic("orders").Growths[0]
	if want := map[string]int64{"fresh": 1_500, "late": 1_900}; !maps.Equal(g.Joined, want) {
		t.Fatalf("joined = %v, want %v", g.Joined, want)
	}
	if !s.StartsGrownPartition("fresh", "orders", 1) || s.StartsGrownPartition("ghost", "orders", 1) || s.StartsGrownPartition("fresh", "orders", 0) {
		t.Fatal("only a noted group starts a grown partition at its log start")
	}
}

// In a rolling upgrade, a growth is ordered only once every registered
// broker applies growths; a broker registering again from an older
// version takes it back.
func TestAllBrokersHaveOrderedGrowthOnlyOnceEveryBrokerSaysSo(t *testing.T) {
	s := NewState()
	register := func(index uint64, id int32, features []string) {
		s.Apply(index, &Command{RegisterBroker: &Broker{ID: id, Host: "127.0.0.1", Port: 9092 + id, RaftAddr: "r", Features: features}})
	}
	register(1, 0, Features)
	register(2, 1, nil)
	if s.AllBrokersHave(FeatureOrderedGrowth) {
		t.Fatal("a broker without the feature is registered")
	}
	register(3, 1, Features)
	if !s.AllBrokersHave(FeatureOrderedGrowth) {
		t.Fatal("every broker has the feature")
	}
	register(4, 0, nil) // rolled back
	if s.AllBrokersHave(FeatureOrderedGrowth) {
		t.Fatal("a broker that registered again without the feature still counts")
	}
}

// TestHoldRuleHoldsAsRuleDoes: the fetch path's holdRule, which copies
// nothing, holds every partition where the whole Rule would, for a growth
// hidden, visible, and with releases lowered by what was delivered.
func TestHoldRuleHoldsAsRuleDoes(t *testing.T) {
	heldAnywhere := 0
	for _, g := range []Growth{
		{Seq: 1, From: 2, To: 3, Splits: []int64{-1, 5}, Holds: []int64{-1, 5}, Releases: []int64{-1, 5}},
		{Seq: 1, From: 2, To: 3, VisibleAt: 1_000, Splits: []int64{4, 5}, Holds: []int64{6, 5}, Releases: []int64{4, 5}},
		{Seq: 2, From: 3, To: 6, VisibleAt: 2_000, LastStaleAt: 2_500, Splits: []int64{4, 5, 0}, Holds: []int64{9, 7, 0},
			Releases: []int64{8, 6, 0}, Delivered: []int64{7, -1, 0}},
	} {
		for index := range g.To + 1 {
			wantAt, wantHeld := growth.Hold(g.Rule(), index)
			at, held := growth.Hold(g.holdRule(), index)
			if held {
				heldAnywhere++
			}
			if at != wantAt || held != wantHeld {
				t.Errorf("growth %d visible at %d, partition %d: holdRule holds (%d, %v), Rule (%d, %v)", g.Seq, g.VisibleAt, index, at, held, wantAt, wantHeld)
			}
		}
	}
	if heldAnywhere < 5 {
		t.Fatalf("the cases hold %d partitions; they must exercise holding", heldAnywhere)
	}
}
