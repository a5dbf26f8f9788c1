package meta

import (
	"cmp"
	"crypto/sha256"
	"maps"
	"slices"
	"strconv"
	"unicode/utf16"
)

// The read-only __consumer_offsets topic, as the metadata holds it. Kafka
// keeps consumer-group state in that compacted topic, and tools that follow
// groups (Burrow, lag exporters) read it. Raftka keeps the state in the
// metadata group instead; this file gives it the shape of Kafka's topic:
// each offset commit and group-metadata change is a record at the next
// offset of its group's partition, and a record whose key has a later
// record is gone, as compaction would leave it. Only the keys and offsets
// are kept here: a live record's value is the key's current state.
const (
	OffsetsTopic = "__consumer_offsets"
	// OffsetsTopicPartitions is Kafka's offsets.topic.num.partitions.
	OffsetsTopicPartitions = 50
	// keptTombstones is how many newer records let compaction drop a
	// tombstone, in place of Kafka's delete.retention.ms: the state
	// machine has no clock.
	keptTombstones = 1000
)

// OffsetsPartition is the partition of __consumer_offsets that holds a
// group's records, as Kafka places it: the absolute value of the group
// id's Java String hash, modulo the partition count.
func OffsetsPartition(group string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		return 0 // Kafka's Utils.abs
	}
	if h < 0 {
		h = -h
	}
	return h % OffsetsTopicPartitions
}

// OffsetsRecord is one live record of __consumer_offsets: an offset
// commit's key (Topic set) or a group's metadata (Topic empty).
type OffsetsRecord struct {
	Offset    int64
	Group     string
	Topic     string `json:",omitempty"`
	Partition int32  `json:",omitempty"`
	// Tombstone: the offset or group was deleted; the record has no value.
	Tombstone bool `json:",omitempty"`
}

func (r OffsetsRecord) key() string {
	return r.Group + "\x00" + r.Topic + "\x00" + strconv.Itoa(int(r.Partition))
}

// offsetsLog is every partition's records, in offset order, and its next
// offset. A record another of its key follows is dead: index names the
// live record of each key, and compact drops the dead ones.
type offsetsLog struct {
	Ends    []int64
	Records [][]OffsetsRecord
	index   map[string]int64
	dead    []int
}

// GroupMetadata is a group's membership as its coordinator last recorded
// it (RecordGroupMetadata): Kafka's GroupMetadataValue.
type GroupMetadata struct {
	ProtocolType string
	Generation   int32
	Protocol     string `json:",omitempty"`
	Leader       string `json:",omitempty"`
	// At is when the group reached this state (Unix milliseconds).
	At      int64
	Members []GroupMember `json:",omitempty"`
}

// GroupMember is one member of a recorded group.
type GroupMember struct {
	ID, InstanceID, ClientID, ClientHost string
	RebalanceTimeoutMillis               int32
	SessionTimeoutMillis                 int32
	Subscription, Assignment             []byte
}

// RecordGroupMetadata records a group's membership, as a Kafka coordinator
// writes it to __consumer_offsets when a rebalance completes or the group
// empties.
type RecordGroupMetadata struct {
	Group    string
	Metadata GroupMetadata
}

// appendOffsetsRecord gives r the next offset of its group's partition and
// makes it the live record of its key.
func (s *State) appendOffsetsRecord(r OffsetsRecord) {
	l := &s.offsetsLog
	if l.Ends == nil {
		l.Ends = make([]int64, OffsetsTopicPartitions)
		l.Records = make([][]OffsetsRecord, OffsetsTopicPartitions)
		l.dead = make([]int, OffsetsTopicPartitions)
	}
	if l.index == nil {
		l.reindex()
	}
	p := OffsetsPartition(r.Group)
	r.Offset = l.Ends[p]
	l.Ends[p]++
	if _, had := l.index[r.key()]; had {
		l.dead[p]++
	}
	l.index[r.key()] = r.Offset
	l.Records[p] = append(l.Records[p], r)
	if l.dead[p] > len(l.Records[p])/2+64 {
		l.compact(p)
	}
}

// live reports whether r is its key's latest record.
func (l *offsetsLog) live(r OffsetsRecord) bool { return l.index[r.key()] == r.Offset }

// compact drops partition p's dead records, and its tombstones that
// keptTombstones newer records follow.
func (l *offsetsLog) compact(p int32) {
	recs := l.Records[p]
	kept := recs[:0]
	for i, r := range recs {
		switch {
		case !l.live(r):
		case r.Tombstone && len(recs)-i > keptTombstones:
			delete(l.index, r.key())
		default:
			kept = append(kept, r)
		}
	}
	clear(recs[len(kept):])
	l.Records[p], l.dead[p] = kept, 0
}

// reindex rebuilds the index and the dead counts from the records, after
// a snapshot is read.
func (l *offsetsLog) reindex() {
	l.index = map[string]int64{}
	l.dead = make([]int, len(l.Records))
	for p, recs := range l.Records {
		for _, r := range recs {
			if _, had := l.index[r.key()]; had {
				l.dead[p]++
			}
			l.index[r.key()] = r.Offset
		}
	}
}

// offsetsLogSnapshot is the log as a snapshot carries it: none before
// the first record.
func (s *State) offsetsLogSnapshot() *offsetsLog {
	if s.offsetsLog.Ends == nil {
		return nil
	}
	return &s.offsetsLog
}

// recordCommits appends a record per committed partition, in topic and
// partition order, so that every replica numbers them alike.
func (s *State) recordCommits(co *CommitOffsets) {
	for _, topic := range slices.Sorted(maps.Keys(co.Offsets)) {
		for _, p := range slices.Sorted(maps.Keys(co.Offsets[topic])) {
			s.appendOffsetsRecord(OffsetsRecord{Group: co.Group, Topic: topic, Partition: p})
		}
	}
}

// recordDeletedOffsets appends a tombstone for each deleted offset that
// has a live record.
func (s *State) recordDeletedOffsets(group string, partitions map[string][]int32) {
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		parts := slices.Sorted(slices.Values(partitions[topic]))
		for _, p := range parts {
			s.tombstone(OffsetsRecord{Group: group, Topic: topic, Partition: p})
		}
	}
}

// tombstone appends r as a tombstone if its key has a live record that is
// not one.
func (s *State) tombstone(r OffsetsRecord) {
	l := &s.offsetsLog
	if l.index == nil {
		l.reindex()
	}
	at, ok := l.index[r.key()]
	if !ok {
		return
	}
	p := OffsetsPartition(r.Group)
	i, found := slices.BinarySearchFunc(l.Records[p], at, byOffset)
	if found && l.Records[p][i].Tombstone {
		return
	}
	r.Tombstone = true
	s.appendOffsetsRecord(r)
}

// recordGroupMetadata keeps a group's membership and appends its record.
func (s *State) recordGroupMetadata(c *RecordGroupMetadata) Outcome {
	if s.groupMetadata == nil {
		s.groupMetadata = map[string]GroupMetadata{}
	}
	s.groupMetadata[c.Group] = c.Metadata
	s.appendOffsetsRecord(OffsetsRecord{Group: c.Group})
	return Outcome{}
}

// deleteGroupState tombstones a deleted group's offsets and metadata.
func (s *State) deleteGroupState(group string) {
	partitions := map[string][]int32{}
	for topic, parts := range s.offsets[group] {
		for p := range parts {
			partitions[topic] = append(partitions[topic], p)
		}
	}
	s.recordDeletedOffsets(group, partitions)
	if _, ok := s.groupMetadata[group]; ok {
		delete(s.groupMetadata, group)
		s.tombstone(OffsetsRecord{Group: group})
	}
}

// OffsetsTopicID is the offsets topic's id for Fetch v13+: the same on
// every broker of a cluster, and another cluster's differs.
func (s *State) OffsetsTopicID() [16]byte {
	sum := sha256.Sum256([]byte("raftka " + OffsetsTopic + " " + s.clusterID))
	var id [16]byte
	copy(id[:], sum[:])
	return id
}

// OffsetsTopicEnd is partition p's next offset. Its log starts at 0, as a
// compacted Kafka log does: compaction leaves gaps, and moves no start.
func (s *State) OffsetsTopicEnd(p int32) int64 {
	if p < 0 || int(p) >= len(s.offsetsLog.Ends) {
		return 0
	}
	return s.offsetsLog.Ends[p]
}

// OffsetsTopicAt is the offset of partition p's first live record whose
// time is at or after ms, the end if none is: ListOffsets by timestamp.
func (s *State) OffsetsTopicAt(p int32, ms int64) int64 {
	found := s.OffsetsTopicEnd(p)
	s.EachOffsetsRecord(p, 0, func(r OffsetsRecord, commit *GroupOffset, group *GroupMetadata) bool {
		at := int64(-1)
		if commit != nil {
			at = commit.CommittedAt
		} else if group != nil {
			at = group.At
		}
		if at >= ms {
			found = r.Offset
			return false
		}
		return true
	})
	return found
}

// EachOffsetsRecord calls fn, in offset order, with partition p's live
// records from offset from on and their values: the commit of an offset
// record, the metadata of a group's; both nil for a tombstone. It stops
// when fn returns false.
func (s *State) EachOffsetsRecord(p int32, from int64, fn func(r OffsetsRecord, commit *GroupOffset, group *GroupMetadata) bool) {
	l := &s.offsetsLog
	if p < 0 || int(p) >= len(l.Records) {
		return
	}
	recs := l.Records[p]
	i, _ := slices.BinarySearchFunc(recs, from, byOffset)
	for _, r := range recs[i:] {
		if !l.live(r) {
			continue
		}
		var commit *GroupOffset
		var group *GroupMetadata
		switch {
		case r.Tombstone:
		case r.Topic != "":
			if o, ok := s.offsets[r.Group][r.Topic][r.Partition]; ok {
				commit = &o
			}
		default:
			if g, ok := s.groupMetadata[r.Group]; ok {
				group = &g
			}
		}
		if !fn(r, commit, group) {
			return
		}
	}
}

// RecordedGroupMetadata is a group's membership as last recorded.
func (s *State) RecordedGroupMetadata(group string) (GroupMetadata, bool) {
	g, ok := s.groupMetadata[group]
	return g, ok
}

func byOffset(r OffsetsRecord, offset int64) int { return cmp.Compare(r.Offset, offset) }
