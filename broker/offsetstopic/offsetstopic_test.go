package offsetstopic

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/groups"
	"github.com/raftka/raftka/broker/meta"
)

// Batches are RecordBatch v2 as a broker serves them: a correct CRC, one
// record each at its offset, keys and values in the versions Kafka writes.
func TestBatchesAreKafkaRecordBatches(t *testing.T) {
	s := meta.NewState()
	s.Apply(1, &meta.Command{CommitOffsets: &meta.CommitOffsets{Group: "g", Offsets: map[string]map[int32]meta.GroupOffset{"t": {3: {Offset: 42, LeaderEpoch: 2, CommittedAt: 1700}}}}})
	s.Apply(2, &meta.Command{RecordGroupMetadata: &meta.RecordGroupMetadata{Group: "g", Metadata: meta.GroupMetadata{ProtocolType: "consumer", Generation: 4, Leader: "m", At: 1800,
		Members: []meta.GroupMember{{ID: "m", ClientID: "c", ClientHost: "/127.0.0.1", SessionTimeoutMillis: 45000, Assignment: []byte{0, 0}}}}}})
	data := Batches(s, meta.OffsetsPartition("g"), 0, 1<<20)
	var offsets []int64
	for len(data) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data); err != nil {
			t.Fatal(err)
		}
		raw := data[:12+int(b.Length)]
		if crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)); crc != binary.BigEndian.Uint32(raw[17:]) {
			t.Fatalf("batch at %d: CRC %x, want %x", b.FirstOffset, binary.BigEndian.Uint32(raw[17:]), crc)
		}
		var r kmsg.Record
		if err := r.ReadFrom(b.Records); err != nil || b.NumRecords != 1 {
			t.Fatalf("batch at %d: %d records, %v", b.FirstOffset, b.NumRecords, err)
		}
		switch b.FirstOffset {
		case 0:
			var k kmsg.OffsetCommitKey
			var v kmsg.OffsetCommitValue
			if k.ReadFrom(r.Key) != nil || v.ReadFrom(r.Value) != nil || k.Version != 1 || v.Version != 3 || k.Topic != "t" || k.Partition != 3 ||
				v.Offset != 42 || v.LeaderEpoch != 2 || v.CommitTimestamp != 1700 || b.FirstTimestamp != 1700 {
				t.Errorf("the commit: key %+v value %+v at %d", k, v, b.FirstTimestamp)
			}
		case 1:
			var k kmsg.GroupMetadataKey
			var v kmsg.GroupMetadataValue
			if k.ReadFrom(r.Key) != nil || v.ReadFrom(r.Value) != nil || k.Version != 2 || v.Version != 3 || v.Generation != 4 ||
				len(v.Members) != 1 || v.Members[0].SessionTimeoutMillis != 45000 || v.CurrentStateTimestamp != 1800 {
				t.Errorf("the group: key %+v value %+v", k, v)
			}
		}
		offsets = append(offsets, b.FirstOffset)
		data = data[len(raw):]
	}
	if len(offsets) != 2 || offsets[0] != 0 || offsets[1] != 1 {
		t.Errorf("batches at %v, want 0 and 1", offsets)
	}
}

type fakeGroups map[string]groups.Description

func (f fakeGroups) List() map[string][2]string {
	out := map[string][2]string{}
	for id, d := range f {
		out[id] = [2]string{d.State, d.ProtocolType}
	}
	return out
}

func (f fakeGroups) Describe(id string) (groups.Description, bool) {
	d, ok := f[id]
	return d, ok
}

type fakeMeta struct{ s *meta.State }

func (m fakeMeta) Read(fn func(*meta.State)) { fn(m.s) }

// The loop records a Stable or Empty group once per change of membership,
// never a group mid-rebalance, and not again when nothing changed.
func TestRecordGroupsProposesChangesOnly(t *testing.T) {
	s := meta.NewState()
	proposed := 0
	d := Deps{Meta: fakeMeta{s}, Log: slog.Default(), Now: func() time.Time { return time.UnixMilli(5000) },
		Propose: func(_ context.Context, c *meta.Command) (meta.Outcome, error) {
			proposed++
			// As it comes out of Raft: through JSON.
			var back meta.Command
			if err := json.Unmarshal(c.Encode(), &back); err != nil {
				t.Fatal(err)
			}
			return s.Apply(uint64(proposed), &back), nil
		}}
	member := groups.MemberDescription{ID: "m", ClientID: "c", Host: "/h", Metadata: []byte{}, Assignment: nil, SessionTimeout: 10 * time.Second}
	g := fakeGroups{"stable": {State: groups.StateStable, ProtocolType: "consumer", Generation: 1, Members: []groups.MemberDescription{member}},
		"joining": {State: groups.StatePreparingRebalance, ProtocolType: "consumer", Generation: 2}}
	d.Groups = g
	recordGroups(context.Background(), d)
	recordGroups(context.Background(), d)
	if proposed != 1 {
		t.Fatalf("%d proposals for one stable group over two passes, want 1", proposed)
	}
	g["stable"] = groups.Description{State: groups.StateEmpty, ProtocolType: "consumer", Generation: 2}
	recordGroups(context.Background(), d)
	if got, _ := s.RecordedGroupMetadata("stable"); proposed != 2 || got.Generation != 2 || len(got.Members) != 0 || got.At != 5000 {
		t.Errorf("after the group emptied: %d proposals, recorded %+v", proposed, got)
	}
}
