package partition

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/brokertest"
)

// modelBatch is what a test knows of a batch it produced.
type modelBatch struct {
	base, last, maxTimestamp int64
	bytes                    []byte // as stored, offsets assigned
}

// expectRead is what Kafka's fetch returns for offset: whole batches of one
// segment from the one holding offset, up to maxBytes but at least one.
func expectRead(batches []modelBatch, segmentBases []int64, offset int64, maxBytes int) []byte {
	i := sort.Search(len(batches), func(i int) bool { return batches[i].last >= offset })
	if i == len(batches) {
		return nil
	}
	segmentOf := func(b modelBatch) int {
		return sort.Search(len(segmentBases), func(j int) bool { return segmentBases[j] > b.base }) - 1
	}
	out := append([]byte(nil), batches[i].bytes...)
	for j := i + 1; j < len(batches); j++ {
		b := batches[j]
		if segmentOf(b) != segmentOf(batches[i]) || len(out)+len(b.bytes) > maxBytes {
			break
		}
		out = append(out, b.bytes...)
	}
	return out
}

func segmentBases(t *testing.T, dir string) []int64 {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var bases []int64
	for _, n := range names {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), ".log"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, base)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases
}

// checkLogAgainstModel compares every lookup of the sparse index with a
// scan of everything the test produced.
func checkLogAgainstModel(t *testing.T, l *Log, dir string, batches []modelBatch) {
	t.Helper()
	start, next := l.Offsets()
	var live []modelBatch
	for _, b := range batches {
		if b.last >= start {
			live = append(live, b)
		}
	}
	bases := segmentBases(t, dir)
	for off := start; off <= next; off++ {
		for _, maxBytes := range []int{1, 3000, 9000, 1 << 20} {
			got, err := l.Read(off, int32(maxBytes))
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			if want := expectRead(live, bases, off, maxBytes); !bytes.Equal(got, want) {
				t.Fatalf("read %d up to %d bytes: got %d bytes, want %d", off, maxBytes, len(got), len(want))
			}
		}
	}
	for ts := int64(0); ts <= 1100; ts += 7 {
		wantOff, wantTS := next, int64(-1)
		for _, b := range live {
			if b.maxTimestamp >= ts {
				wantOff, wantTS = max(b.base, start), b.maxTimestamp
				break
			}
		}
		off, gotTS, err := l.OffsetForTimestamp(ts)
		if err != nil || off != wantOff || gotTS != wantTS {
			t.Fatalf("offset for time %d: %d at %d (%v), want %d at %d", ts, off, gotTS, err, wantOff, wantTS)
		}
	}
	wantOff, wantTS := int64(-1), int64(-1)
	for _, b := range live {
		if b.maxTimestamp > wantTS {
			wantOff, wantTS = b.last, b.maxTimestamp
		}
	}
	if off, ts, err := l.MaxTimestamp(); err != nil || off != wantOff || ts != wantTS {
		t.Fatalf("max timestamp %d at %d (%v), want %d at %d", ts, off, err, wantTS, wantOff)
	}
}

// The sparse index must answer exactly as a scan of every batch would, for
// batches far smaller and far larger than its interval, timestamps out of
// order, several segments, a log start inside a segment and inside a batch,
// and after reopening.
func TestSparseIndexAnswersLikeAFullScan(t *testing.T) {
	dir := t.TempDir()
	const segmentBytes = 48 << 10
	const newestBatch = 250
	s, _ := openSM(t, dir, segmentBytes)
	rng := rand.New(rand.NewPCG(1, 2))
	var batches []modelBatch
	next := int64(0)
	for i := 0; i < 400; i++ {
		var values []string
		switch rng.IntN(10) {
		case 0: // larger than the index interval
			values = []string{strings.Repeat("L", 5000+rng.IntN(9000))}
		default:
			for n := 1 + rng.IntN(4); n > 0; n-- {
				values = append(values, strings.Repeat("s", rng.IntN(40)))
			}
		}
		ts := int64(rng.IntN(1000))
		if i == newestBatch {
			ts = 1050
		}
		raw := brokertest.RecordBatchAt(ts, -1, 0, 0, values...)
		if r := apply(t, s, uint64(i+1), ProduceCommand(1, raw))[0]; r.Err != nil || r.BaseOffset != next {
			t.Fatalf("batch %d: %+v", i, r)
		}
		stored := append([]byte(nil), raw...)
		patchBatch(stored, next, 1)
		last := next + int64(len(values)) - 1
		batches = append(batches, modelBatch{base: next, last: last, maxTimestamp: ts, bytes: stored})
		next = last + 1
	}
	if n := len(segmentBases(t, dir)); n < 4 {
		t.Fatalf("want several segments, have %d", n)
	}
	checkLogAgainstModel(t, s.Log(), dir, batches)

	// A log start inside a batch of the second segment.
	cut := batches[0].base
	for _, b := range batches {
		if b.base > segmentBases(t, dir)[1] && b.last > b.base {
			cut = b.base + 1
			break
		}
	}
	apply(t, s, 401, DeleteRecordsCommand(cut))
	checkLogAgainstModel(t, s.Log(), dir, batches)

	// A log start just past the newest record, in the middle of its
	// segment: the segment's own maximum then no longer counts.
	bases := segmentBases(t, dir)
	newest := batches[newestBatch]
	if k := sort.Search(len(bases), func(k int) bool { return bases[k] > newest.base }); newest.base < cut ||
		k == len(bases) || newest.last+1 >= bases[k] {
		t.Fatal("the newest batch must be followed by another of its segment")
	}
	apply(t, s, 402, DeleteRecordsCommand(newest.last+1))
	checkLogAgainstModel(t, s.Log(), dir, batches)

	closeSM(t, s)
	reopened, _ := openSM(t, dir, segmentBytes)
	checkLogAgainstModel(t, reopened.Log(), dir, batches)
}

// The index grows with the bytes of the log, not with its batches: many
// tiny batches cost no more index than a few large ones.
func TestSparseIndexGrowsWithBytesNotBatches(t *testing.T) {
	s, _ := openSM(t, t.TempDir(), 0)
	const n = 20000
	cmds := make([][]byte, n)
	for i := range cmds {
		cmds[i] = produce(1, -1, 0, 0, "v")
	}
	apply(t, s, 1, cmds...)
	l := s.Log()
	entries := 0
	for _, seg := range l.segs {
		entries += len(seg.index)
	}
	if bound := int(l.SizeBytes()/indexIntervalBytes) + len(l.segs); entries > bound {
		t.Fatalf("%d index entries for %d batches of %d bytes, want at most %d", entries, n, l.SizeBytes(), bound)
	}
	if vals, _ := readValues(t, l, n-1); len(vals) != 1 {
		t.Fatalf("last record: %v", vals)
	}
}
