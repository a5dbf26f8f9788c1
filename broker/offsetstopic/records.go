package offsetstopic

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/meta"
)

// The versions Kafka 3 writes: OffsetCommitKey v1 with OffsetCommitValue
// v3 (KIP-320's leader epoch), GroupMetadataKey v2 with GroupMetadataValue
// v3 (KIP-345's instance ids).
const (
	commitKeyVersion   = 1
	commitValueVersion = 3
	groupKeyVersion    = 2
	groupValueVersion  = 3
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Batches encodes partition p's live records from offset from on, a
// batch of one record each, until maxBytes; the first batch is whole
// whatever its size, as Kafka answers a fetch.
func Batches(s *meta.State, p int32, from int64, maxBytes int) []byte {
	var out []byte
	s.EachOffsetsRecord(p, from, func(r meta.OffsetsRecord, commit *meta.GroupOffset, group *meta.GroupMetadata) bool {
		key, value, at := encode(r, commit, group)
		batch := recordBatch(r.Offset, at, key, value)
		if len(out) > 0 && len(out)+len(batch) > maxBytes {
			return false
		}
		out = append(out, batch...)
		return true
	})
	return out
}

// encode is a record's key and value as Kafka writes them, and its
// timestamp; a tombstone's value is nil and it has none (-1).
func encode(r meta.OffsetsRecord, commit *meta.GroupOffset, group *meta.GroupMetadata) (key, value []byte, at int64) {
	at = -1
	if r.Topic != "" {
		k := kmsg.OffsetCommitKey{Version: commitKeyVersion, Group: r.Group, Topic: r.Topic, Partition: r.Partition}
		key = k.AppendTo(nil)
		if commit != nil {
			v := kmsg.NewOffsetCommitValue()
			v.Version, v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = commitValueVersion, commit.Offset, commit.LeaderEpoch, commit.Metadata, commit.CommittedAt
			value, at = v.AppendTo(nil), commit.CommittedAt
		}
		return key, value, at
	}
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: r.Group}
	key = k.AppendTo(nil)
	if group != nil {
		value, at = groupValue(group).AppendTo(nil), group.At
	}
	return key, value, at
}

func groupValue(g *meta.GroupMetadata) *kmsg.GroupMetadataValue {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation, v.CurrentStateTimestamp = groupValueVersion, g.ProtocolType, g.Generation, g.At
	if g.Protocol != "" {
		v.Protocol = kmsg.StringPtr(g.Protocol)
	}
	if g.Leader != "" {
		v.Leader = kmsg.StringPtr(g.Leader)
	}
	for _, m := range g.Members {
		vm := kmsg.GroupMetadataValueMember{MemberID: m.ID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			RebalanceTimeoutMillis: m.RebalanceTimeoutMillis, SessionTimeoutMillis: m.SessionTimeoutMillis,
			Subscription: m.Subscription, Assignment: m.Assignment}
		if m.InstanceID != "" {
			vm.InstanceID = kmsg.StringPtr(m.InstanceID)
		}
		v.Members = append(v.Members, vm)
	}
	return &v
}

// recordBatch is an uncompressed RecordBatch v2 holding one record at
// offset, as a broker serves it: no producer, the CRC over what follows
// it.
func recordBatch(offset, at int64, key, value []byte) []byte {
	r := kmsg.NewRecord()
	r.Key, r.Value = key, value
	r.Length = int32(len(r.AppendTo(nil)) - 1) // what follows the one-byte varint of a zero length
	b := kmsg.RecordBatch{FirstOffset: offset, Magic: 2, FirstTimestamp: at, MaxTimestamp: at,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: r.AppendTo(nil)}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	out := b.AppendTo(nil)
	// The CRC covers the bytes after it: from the attributes at 21 on.
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32c))
	return out
}
