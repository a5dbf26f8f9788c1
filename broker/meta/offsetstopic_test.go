package meta

import (
	"testing"
)

// A group's partition of __consumer_offsets is Kafka's: these were
// computed with Java (String.hashCode, Utils.abs, modulo 50), among them a
// hash of Integer.MIN_VALUE and characters outside the BMP.
func TestOffsetsPartitionIsKafkas(t *testing.T) {
	for group, want := range map[string]int32{"my-group": 12, "console-consumer-12345": 6, "": 0, "polygenelubricants": 0,
		"grüße-😀": 27, "g-crashed": 30, "billing": 9} {
		if got := OffsetsPartition(group); got != want {
			t.Errorf("OffsetsPartition(%q) = %d, want %d", group, got, want)
		}
	}
}

// offsetsRecords lists partition p's live records from offset 0.
func offsetsRecords(s *State, p int32) []OffsetsRecord {
	var out []OffsetsRecord
	s.EachOffsetsRecord(p, 0, func(r OffsetsRecord, _ *GroupOffset, _ *GroupMetadata) bool {
		out = append(out, r)
		return true
	})
	return out
}

// Each commit and group-metadata change is a record at the next offset
// of the group's partition; a later record of a key leaves only itself,
// as compaction would; deleting a group leaves tombstones, and a snapshot
// keeps the log as it is.
func TestOffsetsTopicRecordsCommitsAndGroupsInOrder(t *testing.T) {
	s := clusterOf(3)
	p := OffsetsPartition("my-group")
	commit := func(topic string, part int32, offset int64) {
		s.Apply(0, &Command{CommitOffsets: &CommitOffsets{Group: "my-group", Offsets: map[string]map[int32]GroupOffset{topic: {part: {Offset: offset, CommittedAt: 1000 + offset}}}}})
	}
	commit("orders", 0, 5)
	commit("orders", 1, 7)
	s.Apply(0, &Command{RecordGroupMetadata: &RecordGroupMetadata{Group: "my-group", Metadata: GroupMetadata{ProtocolType: "consumer", Generation: 1}}})
	commit("orders", 0, 9)
	got := offsetsRecords(s, p)
	want := []OffsetsRecord{{Offset: 1, Group: "my-group", Topic: "orders", Partition: 1}, {Offset: 2, Group: "my-group"}, {Offset: 3, Group: "my-group", Topic: "orders"}}
	if len(got) != len(want) {
		t.Fatalf("records %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if end := s.OffsetsTopicEnd(p); end != 4 {
		t.Errorf("next offset %d, want 4", end)
	}
	if at := s.OffsetsTopicAt(p, 1008); at != 3 {
		t.Errorf("first record at or after 1008 ms: %d, want 3 (the commit at 1009)", at)
	}
	var value int64
	s.EachOffsetsRecord(p, 3, func(r OffsetsRecord, c *GroupOffset, _ *GroupMetadata) bool {
		value = c.Offset
		return false
	})
	if value != 9 {
		t.Errorf("the record at 3 holds offset %d, want the last commit, 9", value)
	}

	s.Apply(0, &Command{DeleteGroup: "my-group"})
	tombstones := 0
	s.EachOffsetsRecord(p, 0, func(r OffsetsRecord, c *GroupOffset, g *GroupMetadata) bool {
		if !r.Tombstone || c != nil || g != nil {
			t.Errorf("after the group's deletion, a live record with a value: %+v", r)
		}
		tombstones++
		return true
	})
	if tombstones != 3 {
		t.Errorf("%d tombstones, want one per key: two offsets and the group", tombstones)
	}

	back := NewState()
	data, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := back.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if a, b := offsetsRecords(s, p), offsetsRecords(back, p); len(a) != len(b) || a[0] != b[0] {
		t.Errorf("after a snapshot: %+v, want %+v", b, a)
	}
	if end := back.OffsetsTopicEnd(p); end != 7 {
		t.Errorf("after a snapshot the next offset is %d, want 7", end)
	}
}

// Compaction bounds the log by its live keys: a group committing one
// partition again and again keeps one record, and the next offset goes on.
func TestOffsetsTopicCompactsSupersededRecords(t *testing.T) {
	s := clusterOf(3)
	for i := range 10000 {
		s.Apply(0, &Command{CommitOffsets: &CommitOffsets{Group: "g", Offsets: map[string]map[int32]GroupOffset{"t": {0: {Offset: int64(i)}}}}})
	}
	p := OffsetsPartition("g")
	if n := len(s.offsetsLog.Records[p]); n > 200 {
		t.Errorf("%d records kept for one key", n)
	}
	if got := offsetsRecords(s, p); len(got) != 1 || got[0].Offset != 9999 {
		t.Errorf("live records %+v, want the last commit at 9999", got)
	}
}
