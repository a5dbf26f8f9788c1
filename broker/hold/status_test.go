package hold

import (
	"slices"
	"testing"

	"github.com/raftka/raftka/broker/meta"
)

// TestAGroupThatJoinedDuringAGrowthDrainsBeforeItsFirstCommit: a group
// whose members subscribed during the growth but that has not committed
// yet (a consumer working through its first poll) holds the growth as a
// committing group does, until it commits at the release.
func TestAGroupThatJoinedDuringAGrowthDrainsBeforeItsFirstCommit(t *testing.T) {
	s := meta.NewState()
	for id := range int32(3) {
		s.Apply(uint64(id+1), &meta.Command{RegisterBroker: &meta.Broker{ID: id, Host: "127.0.0.1", Port: 9092 + id, RaftAddr: "r"}})
	}
	s.Apply(10, &meta.Command{CreateTopic: &meta.CreateTopic{Placement: meta.PlacementEpochs, Name: "orders", Partitions: 1, ReplicationFactor: 3}})
	s.Apply(11, &meta.Command{CreatePartitions: &meta.CreatePartitions{Placement: meta.PlacementEpochs, Name: "orders", Count: 2, Ordered: true, At: 1_000}})
	s.Apply(12, &meta.Command{RecordSplit: &meta.RecordSplit{Topic: "orders", Seq: 1, Partition: 0, Offset: 40, At: 2_000}})
	draining := func() []string { return Statuses(s, "orders")[0].Growths[0].Draining }

	if got := draining(); len(got) != 0 {
		t.Fatalf("draining with no group = %v", got)
	}
	s.Apply(13, &meta.Command{NoteGroups: &meta.NoteGroups{Topic: "orders", Seq: 1, Groups: []string{"new-workers"}, At: 2_100}})
	if got := draining(); !slices.Equal(got, []string{"new-workers"}) {
		t.Fatalf("draining after the group joined = %v, want new-workers", got)
	}
	commit := func(index uint64, offset int64) {
		s.Apply(index, &meta.Command{CommitOffsets: &meta.CommitOffsets{Group: "new-workers",
			Offsets: map[string]map[int32]meta.GroupOffset{"orders": {0: {Offset: offset, CommittedAt: 2_200}}}}})
	}
	commit(14, 39)
	if got := draining(); !slices.Equal(got, []string{"new-workers"}) {
		t.Fatalf("draining below the release = %v, want new-workers", got)
	}
	commit(15, 40)
	if got := draining(); len(got) != 0 {
		t.Fatalf("draining at the release = %v", got)
	}
}
