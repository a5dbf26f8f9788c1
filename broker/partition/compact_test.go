package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kv is one record of a test batch; a nil value is a tombstone.
type kv struct {
	key   string
	value *string
}

func val(s string) *string { return &s }

// keyedBatch builds a RecordBatch v2 of keyed records stamped at ts,
// compressed with codec, as a producer sends it.
func keyedBatch(t *testing.T, codec kgo.CompressionCodec, ts int64, producerID int64, seq int32, records ...kv) []byte {
	t.Helper()
	var raw []byte
	for i, rec := range records {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Key = []byte(rec.key)
		if rec.value != nil {
			r.Value = []byte(*rec.value)
		}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		raw = r.AppendTo(raw)
	}
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(records) - 1),
		FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: producerID, FirstSequence: seq,
		NumRecords: int32(len(records)), Records: raw}
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	if comp != nil {
		var buf bytes.Buffer
		compressed, used := comp.Compress(&buf, raw)
		b.Records, b.Attributes = append([]byte(nil), compressed...), int16(used)
	}
	if producerID < 0 {
		b.ProducerEpoch, b.FirstSequence = -1, -1
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	out := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// consumed is a record as a franz-go consumer parses it.
type consumed struct {
	offset     int64
	key, value string
	tombstone  bool
}

// consume reads the whole log the way a franz-go consumer does, through
// the client's own batch parser (CRC check and decompression included).
func consume(t *testing.T, l *Log) []consumed {
	t.Helper()
	var out []consumed
	from, _ := l.Offsets()
	for {
		data, err := l.Read(from, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			return out
		}
		_, end := l.Offsets()
		rp := kmsg.FetchResponseTopicPartition{HighWatermark: end, RecordBatches: data}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: from, Topic: "t"}, &rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			t.Fatalf("parsing fetched batches at %d: %v", from, fp.Err)
		}
		for _, r := range fp.Records {
			out = append(out, consumed{offset: r.Offset, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
		}
		if next <= from {
			t.Fatalf("consumer stuck at %d", from)
		}
		from = next
	}
}

// The newest record of every key survives compaction at its offset, older
// ones in cleaned segments do not, old tombstones go and fresh ones stay;
// with every codec, and the same after reopening.
func TestCompactionKeepsTheNewestRecordOfEachKey(t *testing.T) {
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := openSM(t, dir, 600)
			const now, day = int64(10_000_000_000), int64(86_400_000)
			var cmds [][]byte
			newest := map[string]consumed{}
			next := int64(0)
			add := func(ts int64, records ...kv) {
				cmds = append(cmds, ProduceCommand(1, keyedBatch(t, codec, ts, -1, 0, records...)))
				for _, r := range records {
					c := consumed{offset: next, key: r.key, tombstone: r.value == nil}
					if r.value != nil {
						c.value = *r.value
					}
					newest[r.key] = c
					next++
				}
			}
			for round := 0; round < 6; round++ {
				for k := 0; k < 8; k += 2 {
					add(now-2*day, kv{fmt.Sprint("k", k), val(fmt.Sprint("r", round))}, kv{fmt.Sprint("k", k+1), val(fmt.Sprint("r", round))})
				}
			}
			add(now-2*day, kv{"k0", nil})     // a tombstone older than delete.retention.ms
			add(now, kv{"k1", nil})           // a fresh one
			add(now, kv{"k2", val("newest")}) // two in one batch: the later wins
			add(now, kv{"k2", val("newer")}, kv{"k2", val("newest2")})
			for i := 0; i < 12; i++ { // fill segments so the keys above are in cleanable ones
				add(now, kv{fmt.Sprint("filler", i), val("x")})
			}
			apply(t, s, 1, cmds...)
			startBefore, endBefore := s.Log().Offsets()
			sizeBefore := s.Log().SizeBytes()

			res, err := s.Clean(CleanOptions{NowMs: now, DeleteRetentionMs: day, MinCleanableDirtyRatio: 0.5})
			if err != nil || !res.Cleaned || res.RecordsRemoved == 0 {
				t.Fatalf("clean: %+v, %v", res, err)
			}
			if start, end := s.Log().Offsets(); start != startBefore || end != endBefore {
				t.Fatalf("offsets moved: [%d, %d) became [%d, %d)", startBefore, endBefore, start, end)
			}
			if s.Log().SizeBytes() != sizeBefore-res.BytesRemoved {
				t.Fatalf("size %d, was %d, %d removed", s.Log().SizeBytes(), sizeBefore, res.BytesRemoved)
			}
			check := func(l *Log) {
				t.Helper()
				got := consume(t, l)
				last := map[string]consumed{}
				for i, c := range got {
					if i > 0 && c.offset <= got[i-1].offset {
						t.Fatalf("offsets out of order: %d after %d", c.offset, got[i-1].offset)
					}
					last[c.key] = c
				}
				for k, want := range newest {
					c, ok := last[k]
					switch {
					case k == "k0":
						if ok {
							t.Fatalf("the old tombstone of k0 is still there: %+v", c)
						}
					case !ok || c != want:
						t.Fatalf("key %s: read %+v (present %v), want %+v", k, c, ok, want)
					}
				}
				if n := len(got); int64(n) != next-res.RecordsRemoved || n >= 20 {
					t.Fatalf("%d records left of %d, %d removed", n, next, res.RecordsRemoved)
				}
			}
			check(s.Log())
			// A second pass right away finds nothing new to clean.
			if again, err := s.Clean(CleanOptions{NowMs: now, DeleteRetentionMs: day, MinCleanableDirtyRatio: 0.5}); err != nil || again.Cleaned {
				t.Fatalf("second pass: %+v, %v", again, err)
			}
			closeSM(t, s)
			reopened, _ := openSM(t, dir, 600)
			check(reopened.Log())
		})
	}
}

// A pass's key map is bounded: a log with more new keys than it holds is
// cleaned in several passes, which end where one unbounded pass does.
func TestCompactionInRoundsEndsWhereOnePassDoes(t *testing.T) {
	const now, day = int64(10_000_000_000), int64(86_400_000)
	var cmds [][]byte
	for i := 0; i < 120; i++ {
		v := val(fmt.Sprint(i))
		if i%17 == 0 {
			v = nil
		}
		ts := now
		if i < 60 {
			ts = now - 2*day // tombstones among these have expired
		}
		cmds = append(cmds, ProduceCommand(1, keyedBatch(t, kgo.SnappyCompression(), ts, -1, 0,
			kv{fmt.Sprint("k", i%23), v}, kv{fmt.Sprint("j", i%7), val(fmt.Sprint(i))})))
	}
	onePass, _ := openSM(t, t.TempDir(), 500)
	rounds, _ := openSM(t, t.TempDir(), 500)
	apply(t, onePass, 1, cmds...)
	apply(t, rounds, 1, cmds...)
	opts := CleanOptions{NowMs: now, DeleteRetentionMs: day}
	if res, err := onePass.Clean(opts); err != nil || !res.Cleaned {
		t.Fatalf("one pass: %+v, %v", res, err)
	}
	opts.MaxKeys = 4
	passes := 0
	for ; passes < 100; passes++ {
		res, err := rounds.Clean(opts)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Cleaned {
			break
		}
	}
	if passes < 3 {
		t.Fatalf("%d passes with a map of 4 keys out of 30", passes)
	}
	if a, b := consume(t, rounds.Log()), consume(t, onePass.Log()); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("after %d bounded passes:\n%v\nafter one pass:\n%v", passes, a, b)
	}
}

// After every pass, bounded or not, a consumer that reads the whole log
// into a table gets the table of everything produced: a tombstone never
// goes before the older values of its key, even past where the pass's key
// map reaches.
func TestCleanerNeverResurrectsADeletedKey(t *testing.T) {
	s, _ := openSM(t, t.TempDir(), 0)
	s.SetSegmentLimits(0, 1000) // the last batch, 5 s later, rolls a new segment
	batch := func(ts int64, records ...kv) []byte {
		return ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), ts, -1, 0, records...))
	}
	apply(t, s, 1, batch(0, kv{"k0", val("a")}), batch(0, kv{"k1", val("b")}), batch(0, kv{"k1", nil}), batch(5000, kv{"k2", val("c")}))
	want := "map[k0:a k2:c]"
	for pass := 0; pass < 5; pass++ {
		res, err := s.Clean(CleanOptions{NowMs: 10_000, DeleteRetentionMs: 1000, MaxKeys: 1})
		if err != nil {
			t.Fatal(err)
		}
		table := map[string]string{}
		for _, c := range consume(t, s.Log()) {
			if c.tombstone {
				delete(table, c.key)
			} else {
				table[c.key] = c.value
			}
		}
		if got := fmt.Sprint(table); got != want {
			t.Fatalf("after pass %d (%+v) a consumer's table is %s, want %s", pass, res, got, want)
		}
	}
}

// Compaction changes no replicated state: a compacted replica and one that
// is not judge the same idempotent retry alike, and a replica catching up
// from a compacted peer ends with the same offsets and records.
func TestCompactedReplicaStaysInStep(t *testing.T) {
	const now = int64(10_000_000_000)
	var cmds [][]byte
	for i := int32(0); i < 30; i++ {
		cmds = append(cmds, ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), now, 9, i, kv{fmt.Sprint("k", i%3), val(fmt.Sprint(i))})))
	}
	// Another producer's batches push producer 9's last ones out of the
	// active segment (two batches fit a segment), so compaction reaches
	// them.
	for i := 0; i < 4; i++ {
		cmds = append(cmds, ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), now, -1, 0, kv{"other", val("o")})))
	}
	compacted, _ := openSM(t, t.TempDir(), 100)
	plain, _ := openSM(t, t.TempDir(), 100)
	apply(t, compacted, 1, cmds...)
	apply(t, plain, 1, cmds...)
	if res, err := compacted.Clean(CleanOptions{NowMs: now}); err != nil || res.RecordsRemoved == 0 {
		t.Fatalf("clean: %+v, %v", res, err)
	}
	// Batch 26 (k2) is in producer 9's window of five and compaction
	// removed its record (k2 is rewritten at 29), yet its retry is still a
	// duplicate at its offset, on both replicas.
	if got := consume(t, compacted.Log()); len(got) == 0 || got[0].offset == 0 {
		t.Fatalf("nothing was compacted: %v", got)
	}
	for _, c := range consume(t, compacted.Log()) {
		if c.offset == 26 {
			t.Fatalf("record 26 survived compaction: %+v", c)
		}
	}
	retry := ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), now, 9, 26, kv{"k2", val("26")}))
	if a, b := apply(t, compacted, 35, retry)[0], apply(t, plain, 35, retry)[0]; a != b || a.BaseOffset != 26 {
		t.Fatalf("retry: compacted replica %+v, the other %+v", a, b)
	}

	peer := &peerLog{log: compacted.Log()}
	fresh, _ := openSMWithSource(t, t.TempDir(), 100, peer)
	if err := fresh.RecoverFromSnapshot(snapshotOf(t, compacted), nil); err != nil {
		t.Fatal(err)
	}
	if a, b := fmt.Sprint(fresh.Log().Offsets()), fmt.Sprint(plain.Log().Offsets()); a != b {
		t.Fatalf("caught up to %s, want %s", a, b)
	}
	if a, b := consume(t, fresh.Log()), consume(t, compacted.Log()); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("caught up with %v, the peer has %v", a, b)
	}
	next := ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), now, 9, 30, kv{"k0", val("30")}))
	if a, b := apply(t, fresh, 36, next)[0], apply(t, plain, 36, next)[0]; a != b || a.BaseOffset != 34 {
		t.Fatalf("next batch: caught-up replica %+v, the other %+v", a, b)
	}
}

// A batch whose records do not parse (its CRC is right: it was produced
// before the topic was compacted) does not stop compaction of the others.
func TestCompactionKeepsBatchesItCannotParse(t *testing.T) {
	s, _ := openSM(t, t.TempDir(), 100)
	garbage := keyedBatch(t, kgo.NoCompression(), 1, -1, 0, kv{"k", val("v")})
	copy(garbage[batchHeaderLength:], "\xff\xff\xff\xff\xff")
	binary.BigEndian.PutUint32(garbage[offCRC:], crc32.Checksum(garbage[offAttributes:], crc32c))
	apply(t, s, 1, ProduceCommand(1, garbage))
	for i := 0; i < 4; i++ {
		apply(t, s, uint64(i+2), ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), 1, -1, 0, kv{"k", val(fmt.Sprint(i))})))
	}
	res, err := s.Clean(CleanOptions{NowMs: 2})
	if err != nil || res.RecordsRemoved != 2 {
		t.Fatalf("clean: %+v, %v; want the 2 superseded records of the parsable batches removed", res, err)
	}
	patchBatch(garbage, 0, 1) // as stored
	data, err := s.Log().Read(0, 1)
	if err != nil || !bytes.Equal(data, garbage) {
		t.Fatalf("the unparsable batch changed: %v", err)
	}
}

// A batch that decompresses to more than the bound is refused, whatever
// its codec, before it takes that much memory.
func TestDecompressionBombIsRefused(t *testing.T) {
	zeros := make([]byte, maxDecompressedBatchBytes+1)
	for name, codec := range map[string]kgo.CompressionCodec{"gzip": kgo.GzipCompression(), "zstd": kgo.ZstdCompression(),
		"lz4": kgo.Lz4Compression(), "snappy": kgo.SnappyCompression()} {
		comp, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		bomb, used := comp.Compress(&buf, zeros)
		b := kmsg.RecordBatch{Magic: 2, Attributes: int16(used), NumRecords: 1, Records: bomb}
		b.Length = int32(len(b.AppendTo(nil)) - 12)
		if _, err := KeylessRecord([][]byte{b.AppendTo(nil)}); !errors.Is(err, kgo.ErrMaxDecompress) {
			t.Errorf("%s: %d bytes that decompress to %d: %v, want ErrMaxDecompress", name, len(bomb), len(zeros), err)
		}
	}
}

// A pass that a crash interrupted leaves a file the next open removes; the
// segment it would have replaced is intact.
func TestInterruptedCompactionLeavesTheSegment(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	apply(t, s, 1, ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), 1, -1, 0, kv{"k", val("v")})))
	closeSM(t, s)
	leftover := filepath.Join(dir, segmentName(0)+".cleaned")
	if err := os.WriteFile(leftover, []byte("half a pass"), 0o644); err != nil {
		t.Fatal(err)
	}
	reopened, _ := openSM(t, dir, 0)
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("leftover still there: %v", err)
	}
	if got := consume(t, reopened.Log()); len(got) != 1 || got[0].value != "v" {
		t.Fatalf("read %+v", got)
	}
}
