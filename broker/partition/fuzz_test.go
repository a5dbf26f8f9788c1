package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	sm "github.com/lni/dragonboat/v3/statemachine"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// FuzzUpdate feeds arbitrary entries to the state machine: it must never
// fail or panic on bad commands, offsets must only grow, a replica that
// reopens has the same producer and transaction tables, and the log start
// never passes the last stable offset.
func FuzzUpdate(f *testing.F) {
	f.Add(produce(1, -1, 0, 0, "a"))
	f.Add(produce(2, 9, 0, 0, "a", "b", "c"))
	f.Add(append(produce(1, 9, 0, 0, "a"), brokertest.RecordBatch(9, 0, 1, "b")...))
	f.Add(DeleteRecordsCommand(1))
	f.Add([]byte{cmdProduce, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200})
	f.Add(lengthPrefixed(ProduceAppendTimeCommand(1, 5000, brokertest.RecordBatch(9, 0, 0, "a")),
		produce(1, 9, 0, 1, "b"), DeleteRecordsCommand(1)))
	f.Add(lengthPrefixed(produce(1, 9, 0, 0, "a"), produce(1, 8, 0, 0, "b"), ExpireProducersCommand(1),
		produce(1, 9, 0, 1, "c"), produce(1, 8, 0, 1, "d")))
	f.Add(lengthPrefixed(produceTxn(1, 5, 0, 0, "a"), produce(1, 6, 0, 0, "b"), produceTxn(1, 5, 0, 1, "c"),
		writeMarker(5, 0, 1, false), produceTxn(1, 5, 0, 2, "late"), produceTxn(2, 5, 0, 2, "d"), DeleteRecordsCommand(3),
		writeMarker(5, 1, 2, true), produceTxn(3, 5, 1, 0, "e")))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		s := NewStateMachine(dir, 4096, nil, nil)
		if _, err := s.Open(nil); err != nil {
			t.Fatal(err)
		}
		defer func() { closeSM(t, s) }() // s is reopened below
		// The input is one or more commands, each prefixed by a 2-byte length.
		var entries []sm.Entry
		for len(data) >= 2 && len(entries) < 16 {
			n := int(binary.BigEndian.Uint16(data))
			data = data[2:]
			n = min(n, len(data))
			entries = append(entries, sm.Entry{Index: uint64(len(entries) + 1), Cmd: data[:n]})
			data = data[n:]
		}
		if len(data) > 0 {
			entries = append(entries, sm.Entry{Index: uint64(len(entries) + 1), Cmd: data})
		}
		if len(entries) == 0 {
			return
		}
		var lastEnd int64
		for _, e := range entries {
			if _, err := s.Update([]sm.Entry{e}); err != nil {
				t.Fatalf("update failed: %v", err)
			}
			start, end := s.Log().Offsets()
			if end < lastEnd || start > end {
				t.Fatalf("offsets went from end %d to [%d, %d)", lastEnd, start, end)
			}
			lastEnd = end
		}
		// A replica that reopens holds what the running one does.
		running := shapeOf(s.Log())
		horizon := s.Log().ProducerHorizon()
		closeSM(t, s)
		s = NewStateMachine(dir, 4096, nil, nil)
		if _, err := s.Open(nil); err != nil {
			t.Fatal(err)
		}
		requireOpenedAsAFullScan(t, s)
		if reopened := shapeOf(s.Log()); !reflect.DeepEqual(reopened.Producers, running.Producers) || s.Log().ProducerHorizon() != horizon {
			t.Fatalf("running: horizon %d, producers %+v\nreopened: horizon %d, producers %+v", horizon, running.Producers, s.Log().ProducerHorizon(), reopened.Producers)
		}
		if reopened := shapeOf(s.Log()); !reflect.DeepEqual(reopened.Txns, running.Txns) {
			t.Fatalf("running: transactions %+v\nreopened: transactions %+v", running.Txns, reopened.Txns)
		}
		if start, _ := s.Log().Offsets(); start > s.Log().LastStable() {
			t.Fatalf("log start %d past the last stable offset %d", start, s.Log().LastStable())
		}
	})
}

// onceSource serves fixed bytes on the first fetch, then stops the recovery.
type onceSource struct {
	data  []byte
	done  chan struct{}
	calls int
}

func (o *onceSource) Fetch(context.Context, int64, int32) ([]byte, int64, error) {
	o.calls++
	if o.calls == 1 {
		return o.data, 0, nil
	}
	close(o.done)
	return nil, 0, nil
}

// FuzzSnapshotCatchUp feeds arbitrary bytes to a replica as the records its
// peers sent while it catches up from a snapshot: it must not panic, never
// go past the snapshot's end, and reopen afterwards.
func FuzzSnapshotCatchUp(f *testing.F) {
	next := brokertest.RecordBatch(-1, 0, 0, "b", "c")
	patchBatch(next, 1, 0)
	f.Add(next, int64(3))
	f.Add(append(append([]byte(nil), next...), next...), int64(2))
	f.Add(brokertest.RecordBatch(-1, 0, 0, "x"), int64(1))
	f.Fuzz(func(t *testing.T, fetched []byte, end int64) {
		if end < 0 || end > 1<<20 {
			return
		}
		dir := t.TempDir()
		done := make(chan struct{})
		s := NewStateMachine(dir, 4096, &onceSource{data: fetched, done: done}, nil)
		if _, err := s.Open(nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update([]sm.Entry{{Index: 1, Cmd: produce(1, -1, 0, 0, "a")}}); err != nil {
			t.Fatal(err)
		}
		hdr := binary.BigEndian.AppendUint64([]byte(snapshotMagic), 10)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(end))
		hdr = binary.BigEndian.AppendUint64(hdr, 0)
		err := s.RecoverFromSnapshot(bytes.NewReader(hdr), done)
		if _, last := s.Log().Offsets(); last > max(end, 1) {
			t.Fatalf("log ends at %d, past the snapshot's end %d (recovery: %v)", last, end, err)
		}
		closeSM(t, s)
		reopened := NewStateMachine(dir, 4096, nil, nil)
		if _, err := reopened.Open(nil); err != nil {
			t.Fatalf("reopen after recovery: %v", err)
		}
		closeSM(t, reopened)
	})
}

// FuzzCompactBatch compacts batches whose records field is arbitrary (the
// CRC is right, as for any stored batch): it must never panic, and what it
// writes must be a well-formed batch with the same offsets, timestamps and
// producer fields, which SplitBatches accepts as a peer's fetch would.
func FuzzCompactBatch(f *testing.F) {
	f.Add(compressedRecords(f, kgo.NoCompression(), "a", "b", "a"), int8(0), uint8(1))
	f.Add(compressedRecords(f, kgo.GzipCompression(), "a", "a"), int8(1), uint8(0))
	f.Add(compressedRecords(f, kgo.ZstdCompression(), "k", "", "k"), int8(4), uint8(2))
	f.Fuzz(func(t *testing.T, records []byte, codec int8, dropEvery uint8) {
		b := kmsg.RecordBatch{Magic: 2, Attributes: int16(codec & 0x07), LastOffsetDelta: 2, FirstOffset: 100,
			FirstTimestamp: 5, MaxTimestamp: 9, ProducerID: 3, ProducerEpoch: 1, FirstSequence: 7, NumRecords: 3, Records: records}
		b.Length = int32(len(b.AppendTo(nil)) - 12)
		raw := b.AppendTo(nil)
		binary.BigEndian.PutUint32(raw[offCRC:], crc32.Checksum(raw[offAttributes:], crc32c))
		n := 0
		out, removed, err := compactBatch(raw, func(int64, *kmsg.Record, int64) bool {
			n++
			return dropEvery == 0 || n%int(dropEvery) != 0
		}, kgo.DefaultDecompressor())
		if err != nil {
			return // recompressing failed: the pass reports it and keeps the segment
		}
		batches, err := SplitBatches(out, 0)
		if err != nil || len(batches) != 1 {
			t.Fatalf("compacted batch is malformed: %v", err)
		}
		before, _ := readHeader(raw)
		after, _ := readHeader(out)
		after.Length, after.Attributes, before.Length, before.Attributes = 0, 0, 0, 0
		if after != before {
			t.Fatalf("header changed: %+v, was %+v", after, before)
		}
		if removed == 0 && !bytes.Equal(out, raw) {
			t.Fatal("nothing removed, yet the batch changed")
		}
	})
}

// lengthPrefixed frames commands as FuzzUpdate reads them.
func lengthPrefixed(cmds ...[]byte) []byte {
	var out []byte
	for _, c := range cmds {
		out = binary.BigEndian.AppendUint16(out, uint16(len(c)))
		out = append(out, c...)
	}
	return out
}

// compressedRecords encodes records with the given keys, compressed.
func compressedRecords(f *testing.F, codec kgo.CompressionCodec, keys ...string) []byte {
	var raw []byte
	for i, k := range keys {
		r := kmsg.NewRecord()
		r.OffsetDelta, r.Key, r.Value = int32(i), []byte(k), []byte("v")
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		raw = r.AppendTo(raw)
	}
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		f.Fatal(err)
	}
	if comp == nil {
		return raw
	}
	var buf bytes.Buffer
	out, _ := comp.Compress(&buf, raw)
	return append([]byte(nil), out...)
}
