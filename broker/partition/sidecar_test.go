package partition

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fillSegments writes 40 batches of two idempotent producers over three
// leader epochs into 1 KiB segments, deletes the first records, and
// returns the next Raft index.
func fillSegments(t *testing.T, s *StateMachine) uint64 {
	t.Helper()
	index := uint64(1)
	seq := map[int64]int32{}
	for i := 0; i < 40; i++ {
		pid := int64(7 + i%2)
		epoch := int32(1 + i/15)
		res := apply(t, s, index, produce(epoch, pid, 0, seq[pid], fmt.Sprintf("v%03d-%s", i, string(make([]byte, 100)))))
		if res[0].Err != nil {
			t.Fatalf("batch %d: %v", i, res[0].Err)
		}
		seq[pid]++
		index++
	}
	apply(t, s, index, DeleteRecordsCommand(5))
	return index + 1
}

func TestReopenReadsOnlyTheActiveSegment(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 1024)
	next := fillSegments(t, s)
	closeSM(t, s)
	segments, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(segments) < 5 {
		t.Fatalf("%d segments; the test wants several closed ones", len(segments))
	}

	before := segmentScans.Load()
	s, _ = openSM(t, dir, 1024) // also compares with a full scan
	if scanned := segmentScans.Load() - before - int64(len(segments)); scanned != 1 {
		t.Fatalf("the open read the headers of %d segments of %d, want only the active one", scanned, len(segments))
	}
	// The reopened replica judges producers as the one that ran did: a
	// retry of the last batch is a duplicate, the next sequence goes on.
	if res := apply(t, s, next, produce(3, 8, 0, 19, "v039-retry")); res[0].Err != nil || res[0].BaseOffset != 39 {
		t.Fatalf("retried batch: %+v, want a duplicate at 39", res[0])
	}
	if res := apply(t, s, next+1, produce(3, 8, 0, 20, "v040")); res[0].Err != nil || res[0].BaseOffset != 40 {
		t.Fatalf("next batch: %+v", res[0])
	}
	closeSM(t, s)

	// Damaged, stale and missing sidecars are read around.
	idx, _ := filepath.Glob(filepath.Join(dir, "*.idx"))
	folds, _ := filepath.Glob(filepath.Join(dir, "*.fold"))
	if len(idx) == 0 || len(folds) == 0 {
		t.Fatalf("%d index and %d fold files", len(idx), len(folds))
	}
	if err := os.WriteFile(idx[0], []byte("RAFTKA-SEGIDX-1\nnot an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(folds[len(folds)-1])
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(folds[len(folds)-1], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(idx[len(idx)-1]); err != nil {
		t.Fatal(err)
	}
	s, _ = openSM(t, dir, 1024)
	if got, _ := readValues(t, s.Log(), 5); len(got) != 36 {
		t.Fatalf("read %d records after the deletion, want 36", len(got))
	}
}
