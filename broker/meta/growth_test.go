package meta

import (
	"encoding/json"
	"slices"
	"testing"
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
