package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v3/statemachine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

func openSM(t *testing.T, dir string, segmentBytes int64) (*StateMachine, uint64) {
	t.Helper()
	return openSMWithSource(t, dir, segmentBytes, nil)
}

func openSMWithSource(t *testing.T, dir string, segmentBytes int64, source Source) (*StateMachine, uint64) {
	t.Helper()
	s := NewStateMachine(dir, segmentBytes, source, nil)
	applied, err := s.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // a test that closed it already checked the error
	requireOpenedAsAFullScan(t, s)
	return s, applied
}

// logShape is what an open derives from a log's files.
type logShape struct {
	Next, Start int64
	Segments    []segmentShape
	Epochs      []epochStart
	Producers   producers
	Txns        txnShape
}

// txnShape is a transaction table with empty parts as nil, so that tables
// built in different orders compare alike.
type txnShape struct {
	Open    map[int64]int64
	Aborted []AbortedTxn
	Ended   map[int64]endedTxn
}

func shapeOfTxns(t *txns) txnShape {
	var sh txnShape
	if len(t.open) > 0 {
		sh.Open = t.open
	}
	if len(t.aborted) > 0 {
		sh.Aborted = t.aborted
	}
	if len(t.ended) > 0 {
		sh.Ended = t.ended
	}
	return sh
}

type segmentShape struct {
	Base, Size, Last, FirstTimestamp, MaxTimestamp, MaxTimestampOffset int64
	Index                                                              []indexEntry
}

func shapeOf(l *Log) logShape {
	l.mu.RLock()
	defer l.mu.RUnlock()
	sh := logShape{Next: l.next, Start: l.start, Epochs: l.epochs, Producers: l.producer, Txns: shapeOfTxns(&l.txn)}
	for _, s := range l.segs {
		sh.Segments = append(sh.Segments, segmentShape{s.base, s.size, s.last, s.firstTimestamp, s.maxTimestamp, s.maxTimestampOffset, s.index})
	}
	return sh
}

// requireOpenedAsAFullScan opens the state machine's log again reading
// every batch header, and fails t unless that gives what the open through
// the sidecar files gave: every test that reopens a replica checks the
// sidecars so.
func requireOpenedAsAFullScan(t *testing.T, s *StateMachine) {
	t.Helper()
	full, err := openLogWith(s.dir, s.ck, s.frames, false)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if got, want := shapeOf(s.log), shapeOf(full); !reflect.DeepEqual(got, want) {
		t.Fatalf("opened through sidecars:\n%+v\nby reading every header:\n%+v", got, want)
	}
}

// closeSM closes a state machine as a clean shutdown does.
func closeSM(t testing.TB, s *StateMachine) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// apply runs commands as Raft entries from index first on.
func apply(t *testing.T, s *StateMachine, first uint64, cmds ...[]byte) []Result {
	t.Helper()
	entries := make([]sm.Entry, len(cmds))
	for i, c := range cmds {
		entries[i] = sm.Entry{Index: first + uint64(i), Cmd: c}
	}
	out, err := s.Update(entries)
	if err != nil {
		t.Fatal(err)
	}
	res := make([]Result, len(out))
	for i, e := range out {
		res[i] = DecodeResult(e.Result)
	}
	return res
}

func produce(epoch int32, pid int64, pepoch int16, seq int32, values ...string) []byte {
	return ProduceCommand(epoch, brokertest.RecordBatch(pid, pepoch, seq, values...))
}

// readValues decodes every record value from offset on.
func readValues(t *testing.T, l *Log, from int64) ([]string, []int64) {
	t.Helper()
	var vals []string
	var offs []int64
	for {
		data, err := l.Read(from, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			return vals, offs
		}
		for len(data) > 0 {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(data); err != nil {
				t.Fatal(err)
			}
			raw := b.Records
			for i := int32(0); i < b.NumRecords; i++ {
				var r kmsg.Record
				if err := r.ReadFrom(raw); err != nil {
					t.Fatal(err)
				}
				raw = raw[len(r.AppendTo(nil)):]
				off := b.FirstOffset + int64(r.OffsetDelta)
				if off >= from {
					vals, offs = append(vals, string(r.Value)), append(offs, off)
				}
			}
			from = b.FirstOffset + int64(b.LastOffsetDelta) + 1
			data = data[12+b.Length:]
		}
	}
}

func TestAppendAssignsOffsetsAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, applied := openSM(t, dir, 0)
	if applied != 0 {
		t.Fatalf("fresh state machine applied %d", applied)
	}
	res := apply(t, s, 1, produce(3, -1, 0, 0, "a", "b"), produce(3, -1, 0, 0, "c"), DeleteRecordsCommand(1))
	if res[0].BaseOffset != 0 || res[1].BaseOffset != 2 || res[2].LogStartOffset != 1 {
		t.Fatalf("results %+v", res)
	}
	vals, offs := readValues(t, s.Log(), 1)
	if !equal(vals, []string{"b", "c"}) || offs[0] != 1 || offs[1] != 2 {
		t.Fatalf("read %v at %v", vals, offs)
	}
	if e, end := s.Log().EndOffsetForEpoch(3); e != 3 || end != 3 {
		t.Fatalf("epoch 3 ends at %d (epoch %d)", end, e)
	}
	closeSM(t, s)

	s2, applied := openSM(t, dir, 0)
	if applied != 3 {
		t.Fatalf("reopened at applied index %d, want 3", applied)
	}
	start, end := s2.Log().Offsets()
	if start != 1 || end != 3 {
		t.Fatalf("reopened offsets [%d, %d), want [1, 3)", start, end)
	}
	if _, err := s2.Log().Read(0, 100); err != ErrOffsetOutOfRange {
		t.Fatalf("read below log start: %v", err)
	}
}

func TestIdempotentProducerTable(t *testing.T) {
	s, _ := openSM(t, t.TempDir(), 0)
	cases := []struct {
		name    string
		cmd     []byte
		wantErr error
		base    int64
	}{
		{"first batch", produce(1, 7, 0, 0, "a", "b"), nil, 0},
		{"next batch", produce(1, 7, 0, 2, "c"), nil, 2},
		{"retry of first batch", produce(1, 7, 0, 0, "a", "b"), nil, 0},
		{"gap", produce(1, 7, 0, 9, "x"), kerr.OutOfOrderSequenceNumber, -1},
		{"unknown producer mid-sequence", produce(1, 8, 0, 5, "x"), kerr.OutOfOrderSequenceNumber, -1},
		{"new epoch restarts at 0", produce(1, 7, 1, 0, "d"), nil, 3},
		{"old epoch fenced", produce(1, 7, 0, 3, "x"), kerr.InvalidProducerEpoch, -1},
		{"new epoch must start at 0", produce(1, 7, 2, 4, "x"), kerr.OutOfOrderSequenceNumber, -1},
		{"non-idempotent batch", produce(1, -1, -1, -1, "e"), nil, 4},
	}
	for i, c := range cases {
		got := apply(t, s, uint64(i+1), c.cmd)[0]
		if got.Err != c.wantErr || (c.wantErr == nil && got.BaseOffset != c.base) {
			t.Fatalf("%s: got %v at %d, want %v at %d", c.name, got.Err, got.BaseOffset, c.wantErr, c.base)
		}
	}
	vals, _ := readValues(t, s.Log(), 0)
	if !equal(vals, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("stored %v", vals)
	}
}

// Records deleted from the head of a batch leave the batch in the log, so
// a retry of it is still the duplicate it is, reopened or not.
func TestRetryOfAPartlyDeletedBatchIsADuplicate(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	apply(t, s, 1, produce(1, 7, 0, 0, "a", "b", "c"), DeleteRecordsCommand(2))
	retry := func(s *StateMachine, index uint64) {
		t.Helper()
		if r := apply(t, s, index, produce(1, 7, 0, 0, "a", "b", "c"))[0]; r.Err != nil || r.BaseOffset != 0 {
			t.Fatalf("retry: %+v", r)
		}
		if _, end := s.Log().Offsets(); end != 3 {
			t.Fatalf("the retry was appended: log ends at %d", end)
		}
	}
	retry(s, 3)
	closeSM(t, s)
	reopened, _ := openSM(t, dir, 0)
	retry(reopened, 4)
}

func TestProducerWindowRemembersFiveBatches(t *testing.T) {
	s, _ := openSM(t, t.TempDir(), 0)
	for i := int32(0); i < 7; i++ {
		apply(t, s, uint64(i+1), produce(1, 1, 0, i, "v"))
	}
	// Batches 2..6 are remembered; batch 1 fell out of the window and is
	// now a sequence error rather than a silent duplicate.
	if r := apply(t, s, 8, produce(1, 1, 0, 2, "v"))[0]; r.Err != nil || r.BaseOffset != 2 {
		t.Fatalf("retry within window: %+v", r)
	}
	if r := apply(t, s, 9, produce(1, 1, 0, 1, "v"))[0]; r.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("retry outside window: %+v", r)
	}
}

func TestMalformedCommandsAreResultsNotErrors(t *testing.T) {
	s, _ := openSM(t, t.TempDir(), 0)
	bad := brokertest.RecordBatch(-1, 0, 0, "x")
	bad[len(bad)-1] ^= 1
	res := apply(t, s, 1, nil, []byte{99}, []byte{cmdProduce}, ProduceCommand(1, bad), ProduceCommand(1, []byte{1, 2}),
		DeleteRecordsCommand(5), []byte{cmdDeleteRecords, 1})
	for i, r := range res {
		if r.Err == nil {
			t.Fatalf("command %d accepted", i)
		}
	}
	if _, end := s.Log().Offsets(); end != 0 {
		t.Fatalf("log end %d after only bad commands", end)
	}
}

func TestTornTailIsTruncatedOnOpen(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	apply(t, s, 1, produce(1, -1, 0, 0, "a"), produce(1, -1, 0, 0, "b"))
	closeSM(t, s)
	seg := filepath.Join(dir, segmentName(0))
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Half a batch, as a crash in the middle of a write leaves it.
	if _, err := f.Write(brokertest.RecordBatch(-1, 0, 0, "torn")[:30]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s2, applied := openSM(t, dir, 0)
	if applied != 2 {
		t.Fatalf("applied %d", applied)
	}
	vals, _ := readValues(t, s2.Log(), 0)
	if !equal(vals, []string{"a", "b"}) {
		t.Fatalf("after torn tail: %v", vals)
	}
	r := apply(t, s2, 3, produce(1, -1, 0, 0, "c"))[0]
	if r.BaseOffset != 2 {
		t.Fatalf("append after truncation at %d", r.BaseOffset)
	}
}

func TestBatchesBeyondCheckpointAreDroppedForReplay(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	apply(t, s, 1, produce(1, -1, 0, 0, "a"))
	ck := s.ck
	apply(t, s, 2, produce(1, -1, 0, 0, "b"))
	// Crash after the segment write but before the checkpoint: the
	// checkpoint still says index 1, so Raft will replay entry 2.
	if err := writeCheckpoint(s.ckFile, checkpoint{Seq: s.ck.Seq + 1, AppliedIndex: ck.AppliedIndex, NextOffset: ck.NextOffset, LogStartOffset: ck.LogStartOffset}); err != nil {
		t.Fatal(err)
	}
	crashSM(s)
	s2, applied := openSM(t, dir, 0)
	if applied != 1 {
		t.Fatalf("applied %d, want 1", applied)
	}
	apply(t, s2, 2, produce(1, -1, 0, 0, "b"))
	vals, _ := readValues(t, s2.Log(), 0)
	if !equal(vals, []string{"a", "b"}) {
		t.Fatalf("after replay: %v, want [a b] once", vals)
	}
}

// Update leaves durability to Sync: a crash after entries applied since
// the last Sync reopens at that Sync, and Raft's replay of the entries
// after it gives the same log as before, each batch once.
func TestCrashAfterUnsyncedUpdatesReplaysThem(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	apply(t, s, 1, produce(1, -1, 0, 0, "a"), produce(1, -1, 0, 0, "b"))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	apply(t, s, 3, produce(1, -1, 0, 0, "c"), produce(1, -1, 0, 0, "d"))
	crashSM(s)
	s2, applied := openSM(t, dir, 0)
	if applied != 2 {
		t.Fatalf("reopened at applied index %d, want the synced 2", applied)
	}
	res := apply(t, s2, 3, produce(1, -1, 0, 0, "c"), produce(1, -1, 0, 0, "d"))
	if res[0].BaseOffset != 2 || res[1].BaseOffset != 3 {
		t.Fatalf("replayed at %+v, want offsets 2 and 3 again", res)
	}
	vals, offs := readValues(t, s2.Log(), 0)
	if !equal(vals, []string{"a", "b", "c", "d"}) || offs[3] != 3 {
		t.Fatalf("after replay: %v at %v", vals, offs)
	}
	closeSM(t, s2)
	if _, applied := openSM(t, dir, 0); applied != 4 {
		t.Fatalf("a clean close left applied index %d, want 4", applied)
	}
}

// crashSM closes a state machine's files as a crash leaves them: without
// the Sync of a clean Close.
func crashSM(s *StateMachine) {
	s.log.Close()
	_ = s.ckFile.Close()
}

// TestSnapshotReplacesALogThatIsNotAPrefix: a replica whose log cannot
// continue to the snapshot's offsets starts over from the snapshot's log
// start, with the producer table rebuilt from the fetched records.
func TestSnapshotReplacesALogThatIsNotAPrefix(t *testing.T) {
	src, _ := openSM(t, t.TempDir(), 200)
	for i := 0; i < 20; i++ {
		apply(t, src, uint64(i+1), produce(2, 5, 0, int32(i), "value"))
	}
	apply(t, src, 21, DeleteRecordsCommand(4))
	snap := snapshotOf(t, src)
	dstDir := t.TempDir()
	dst, _ := openSMWithSource(t, dstDir, 200, &peerLog{log: src.Log()})
	apply(t, dst, 1, produce(1, -1, 0, 0, "stale"))
	if err := dst.RecoverFromSnapshot(snap, nil); err != nil {
		t.Fatal(err)
	}
	want, _ := readValues(t, src.Log(), 4)
	got, _ := readValues(t, dst.Log(), 4)
	if !equal(got, want) || len(got) != 16 {
		t.Fatalf("recovered %d records, want %d", len(got), len(want))
	}
	if s, e := dst.Log().Offsets(); s != 4 || e != 20 {
		t.Fatalf("recovered offsets [%d, %d)", s, e)
	}
	// The producer table came along: a retry of the last batch is known.
	if r := apply(t, dst, 22, produce(2, 5, 0, 19, "value"))[0]; r.Err != nil || r.BaseOffset != 19 {
		t.Fatalf("retry after recovery: %+v", r)
	}
	closeSM(t, dst)
	reopened, applied := openSM(t, dstDir, 200)
	if applied != 22 {
		t.Fatalf("reopened at %d, want 22", applied)
	}
	if s, e := reopened.Log().Offsets(); s != 4 || e != 20 {
		t.Fatalf("reopened offsets [%d, %d)", s, e)
	}
}

func TestRetentionDropsWholeSegments(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 300)
	for i := 0; i < 30; i++ {
		apply(t, s, uint64(i+1), produce(1, -1, 0, 0, "0123456789"))
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	total := s.Log().SizeBytes()
	point := s.Log().RetentionPoint(0, total/2)
	if point <= 0 || point >= 30 {
		t.Fatalf("retention point %d", point)
	}
	apply(t, s, 31, DeleteRecordsCommand(point))
	after, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(after) >= len(segs) || s.Log().SizeBytes() > total/2+300 {
		t.Fatalf("%d segments before, %d after, %d of %d bytes left", len(segs), len(after), s.Log().SizeBytes(), total)
	}
	if start, _ := s.Log().Offsets(); start != point {
		t.Fatalf("log start %d, want %d", start, point)
	}
	// The byte budget never takes the active segment.
	if p := s.Log().RetentionPoint(0, 0); p == 30 {
		t.Fatal("retention.bytes would delete the active segment")
	}
}

// A quiet topic's only segment expires too, as Kafka rolls and deletes an
// expired active segment: otherwise its records would outlive retention.ms
// until enough new ones filled the segment.
func TestRetentionDeletesAnExpiredActiveSegment(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	apply(t, s, 1, ProduceCommand(1, brokertest.RecordBatchAt(1000, -1, 0, 0, "old", "older")))
	if p := s.Log().RetentionPoint(1000, -1); p != 0 {
		t.Fatalf("records at 1000 expired by a cut-off at 1000: point %d", p)
	}
	point := s.Log().RetentionPoint(1001, -1)
	if point != 2 {
		t.Fatalf("retention point %d, want the log end 2", point)
	}
	apply(t, s, 2, DeleteRecordsCommand(point))
	if segs, _ := filepath.Glob(filepath.Join(dir, "*.log")); len(segs) != 0 || s.Log().SizeBytes() != 0 {
		t.Fatalf("segments left: %v, %d bytes", segs, s.Log().SizeBytes())
	}
	closeSM(t, s)
	reopened, _ := openSM(t, dir, 0)
	if start, end := reopened.Log().Offsets(); start != 2 || end != 2 {
		t.Fatalf("reopened at [%d, %d), want [2, 2)", start, end)
	}
	if r := apply(t, reopened, 3, produce(1, -1, 0, 0, "new"))[0]; r.Err != nil || r.BaseOffset != 2 {
		t.Fatalf("produce after: %+v", r)
	}
	if vals, offs := readValues(t, reopened.Log(), 2); !equal(vals, []string{"new"}) || offs[0] != 2 {
		t.Fatalf("read %v at %v", vals, offs)
	}
}

// segment.ms rolls by record time: a batch whose records are segment.ms
// newer than the segment's first starts a new one.
func TestSegmentMsRollsByRecordTime(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	s.SetSegmentLimits(0, 1000)
	for i, ts := range []int64{0, 500, 999, 1000, 1500, 2100} {
		apply(t, s, uint64(i+1), ProduceCommand(1, brokertest.RecordBatchAt(ts, -1, 0, 0, "v")))
	}
	if got := fmt.Sprint(segmentBases(t, dir)); got != "[0 3 5]" {
		t.Fatalf("segments begin at %s, want [0 3 5]", got)
	}
}

// peerLog serves records from another replica's log, as the broker's
// Source does from its peers over the Kafka protocol.
type peerLog struct {
	log     *Log
	fetched int
	calls   int
}

func (p *peerLog) Fetch(_ context.Context, from int64, maxBytes int32) ([]byte, int64, error) {
	p.calls++
	start, _ := p.log.Offsets()
	data, err := p.log.Read(from, maxBytes)
	if errors.Is(err, ErrOffsetOutOfRange) {
		return nil, start, nil
	}
	p.fetched += len(data)
	return data, start, err
}

func snapshotOf(t *testing.T, s *StateMachine) *bytes.Buffer {
	t.Helper()
	state, err := s.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.SaveSnapshot(state, &buf, nil); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// TestSnapshotFetchesOnlyMissingRecords: a replica that applied a prefix of
// the log keeps it and fetches only the rest.
func TestSnapshotFetchesOnlyMissingRecords(t *testing.T) {
	src, _ := openSM(t, t.TempDir(), 300)
	dstDir := t.TempDir()
	peer := &peerLog{log: src.Log()}
	dst, _ := openSMWithSource(t, dstDir, 300, peer)
	var cmds [][]byte
	for i := 0; i < 20; i++ {
		cmds = append(cmds, produce(1, 7, 0, int32(2*i), fmt.Sprint("v", i), fmt.Sprint("w", i)))
	}
	apply(t, src, 1, cmds...)
	apply(t, dst, 1, cmds[:12]...)
	kept := dst.Log().SizeBytes()
	if err := dst.RecoverFromSnapshot(snapshotOf(t, src), nil); err != nil {
		t.Fatal(err)
	}
	if want := src.Log().SizeBytes() - kept; int64(peer.fetched) != want {
		t.Fatalf("fetched %d bytes, want only the %d missing", peer.fetched, want)
	}
	want, wantOffs := readValues(t, src.Log(), 0)
	got, gotOffs := readValues(t, dst.Log(), 0)
	if !equal(got, want) || fmt.Sprint(gotOffs) != fmt.Sprint(wantOffs) || len(got) != 40 {
		t.Fatalf("recovered %v at %v, want %v at %v", got, gotOffs, want, wantOffs)
	}
	// The next entries apply as on the source, a retry included.
	next := produce(1, 7, 0, 40, "x")
	if r, w := apply(t, dst, 21, next)[0], apply(t, src, 21, next)[0]; r != w || r.BaseOffset != 40 {
		t.Fatalf("after recovery: %+v, source %+v", r, w)
	}
	if r := apply(t, dst, 22, produce(1, 7, 0, 38, "v19", "w19"))[0]; r.Err != nil || r.BaseOffset != 38 {
		t.Fatalf("retry after recovery: %+v", r)
	}
	closeSM(t, dst)
	reopened, applied := openSM(t, dstDir, 300)
	if applied != 22 {
		t.Fatalf("reopened at %d, want 22", applied)
	}
	if got, _ := readValues(t, reopened.Log(), 0); len(got) != 41 {
		t.Fatalf("reopened with %d records, want 41", len(got))
	}
}

// TestSnapshotStartsInsideABatch: records deleted up to the middle of a
// batch leave the log start there on the recovered replica too.
func TestSnapshotStartsInsideABatch(t *testing.T) {
	src, _ := openSM(t, t.TempDir(), 1<<20)
	apply(t, src, 1, produce(1, -1, 0, 0, "a", "b", "c"), produce(1, -1, 0, 0, "d", "e"), DeleteRecordsCommand(1))
	dst, _ := openSMWithSource(t, t.TempDir(), 1<<20, &peerLog{log: src.Log()})
	if err := dst.RecoverFromSnapshot(snapshotOf(t, src), nil); err != nil {
		t.Fatal(err)
	}
	if s, e := dst.Log().Offsets(); s != 1 || e != 5 {
		t.Fatalf("recovered offsets [%d, %d), want [1, 5)", s, e)
	}
	if got, _ := readValues(t, dst.Log(), 1); !equal(got, []string{"b", "c", "d", "e"}) {
		t.Fatalf("recovered %v", got)
	}
}

// TestSnapshotAfterRecordsWereDeletedEverywhere: when the peers deleted the
// records meanwhile, the replica still ends exactly at the snapshot's end,
// so the entries after it get the same offsets as on every other replica.
func TestSnapshotAfterRecordsWereDeletedEverywhere(t *testing.T) {
	src, _ := openSM(t, t.TempDir(), 100)
	for i := 0; i < 10; i++ {
		apply(t, src, uint64(i+1), produce(1, -1, 0, 0, "0123456789"))
	}
	snap := snapshotOf(t, src)
	later := [][]byte{DeleteRecordsCommand(10), produce(1, -1, 0, 0, "after")}
	apply(t, src, 11, later...)
	dst, _ := openSMWithSource(t, t.TempDir(), 100, &peerLog{log: src.Log()})
	if err := dst.RecoverFromSnapshot(snap, nil); err != nil {
		t.Fatal(err)
	}
	if s, e := dst.Log().Offsets(); s != 10 || e != 10 {
		t.Fatalf("recovered offsets [%d, %d), want [10, 10)", s, e)
	}
	if r := apply(t, dst, 11, later...); r[1].BaseOffset != 10 {
		t.Fatalf("next record at %d, want 10", r[1].BaseOffset)
	}
	if got, _ := readValues(t, dst.Log(), 10); !equal(got, []string{"after"}) {
		t.Fatalf("after recovery: %v", got)
	}
}

// TestSnapshotRecoveryStopsAndLeavesTheReplicaAsItWas: with no peer to
// fetch from, recovery waits until stopped; the replica reopens unchanged.
func TestSnapshotRecoveryStopsAndLeavesTheReplicaAsItWas(t *testing.T) {
	src, _ := openSM(t, t.TempDir(), 1<<20)
	apply(t, src, 1, produce(1, -1, 0, 0, "a"), produce(1, -1, 0, 0, "b"))
	emptyPeer, _ := openSM(t, t.TempDir(), 1<<20)
	dir := t.TempDir()
	peer := &peerLog{log: emptyPeer.Log()}
	dst, _ := openSMWithSource(t, dir, 1<<20, peer)
	apply(t, dst, 1, produce(1, -1, 0, 0, "a"))
	done := make(chan struct{})
	time.AfterFunc(500*time.Millisecond, func() { close(done) })
	if err := dst.RecoverFromSnapshot(snapshotOf(t, src), done); !errors.Is(err, sm.ErrSnapshotStopped) {
		t.Fatalf("recovery without peers: %v, want ErrSnapshotStopped", err)
	}
	if peer.calls < 2 {
		t.Fatalf("asked the peer %d times, want retries", peer.calls)
	}
	closeSM(t, dst)
	reopened, applied := openSM(t, dir, 1<<20)
	if got, _ := readValues(t, reopened.Log(), 0); applied != 1 || !equal(got, []string{"a"}) {
		t.Fatalf("reopened at %d with %v, want 1 with [a]", applied, got)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestProducerTableAfterDeletionIsTheSameReopenedOrNot: once DeleteRecords
// removed a producer's batches, a replica that kept running and one that
// reopened since judge the producer's next batches alike, so they cannot
// diverge.
func TestProducerTableAfterDeletionIsTheSameReopenedOrNot(t *testing.T) {
	history := [][]byte{}
	for i := 0; i < 5; i++ {
		history = append(history, produce(1, 7, 0, int32(i), "0123456789"))
	}
	history = append(history, produce(1, 8, 0, 0, "other"), DeleteRecordsCommand(5))
	// Producer 7's five batches fill the first segment exactly, so the
	// deletion removes every one of them.
	segment := int64(5 * len(brokertest.RecordBatch(7, 0, 0, "0123456789")))
	running, _ := openSM(t, t.TempDir(), segment)
	apply(t, running, 1, history...)
	dir := t.TempDir()
	first, _ := openSM(t, dir, segment)
	apply(t, first, 1, history...)
	closeSM(t, first)
	reopened, _ := openSM(t, dir, segment)
	if s, _ := reopened.Log().Offsets(); s != 5 {
		t.Fatalf("log start %d after reopening, want 5", s)
	}
	next := [][]byte{produce(1, 7, 0, 9, "gap"), produce(1, 7, 0, 4, "0123456789"), produce(1, 8, 0, 1, "more")}
	a := apply(t, running, uint64(len(history)+1), next...)
	b := apply(t, reopened, uint64(len(history)+1), next...)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("the running replica decided %v, the reopened one %v", a, b)
	}
	if a[2].Err != nil {
		t.Fatalf("a producer whose batches remain keeps its sequence: %+v", a[2])
	}
}

// A LogAppendTime topic's batches carry the leader's time from the entry,
// marked as such, with a CRC that still holds: a consumer reads that time
// for every record, and time lookups use it.
func TestLogAppendTimeStampsBatches(t *testing.T) {
	s, _ := openSM(t, t.TempDir(), 0)
	raw := keyedBatch(t, kgo.NoCompression(), 10, -1, 0, kv{"a", val("1")}, kv{"b", val("2")})
	if r := apply(t, s, 1, ProduceAppendTimeCommand(1, 5000, raw))[0]; r.Err != nil || r.BaseOffset != 0 {
		t.Fatalf("apply: %+v", r)
	}
	data, err := s.Log().Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	rp := kmsg.FetchResponseTopicPartition{HighWatermark: 2, RecordBatches: data}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"}, &rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil || len(fp.Records) != 2 {
		t.Fatalf("parsed %d records: %v", len(fp.Records), fp.Err)
	}
	for _, r := range fp.Records {
		if r.Timestamp.UnixMilli() != 5000 || r.Attrs.TimestampType() != 1 {
			t.Fatalf("record %d: time %d, type %d; want the append time 5000, type 1", r.Offset, r.Timestamp.UnixMilli(), r.Attrs.TimestampType())
		}
	}
	if off, ts, err := s.Log().OffsetForTimestamp(4000); err != nil || off != 0 || ts != 5000 {
		t.Fatalf("offset for time 4000: %d at %d (%v)", off, ts, err)
	}
}

// Producers idle past the horizon are forgotten, the same way by a replica
// that keeps running, one that reopens (through its sidecars and by every
// header) and one that recovers from a snapshot: each decides the next
// batches alike. A forgotten producer may go on with its next sequence, as
// Kafka lets a producer whose state expired; one still remembered keeps
// its retries deduplicated.
func TestExpiredProducersAreForgottenAlikeEverywhere(t *testing.T) {
	history := [][]byte{
		produce(1, 7, 0, 0, "a"), produce(1, 7, 0, 1, "b"), // offsets 0, 1
		produce(1, 8, 0, 0, "c"), produce(1, 8, 0, 1, "d"), // 2, 3
		ExpireProducersCommand(2), // producer 7's batches all end below 2
		produce(1, 8, 0, 2, "e"),  // 4
	}
	running, _ := openSM(t, t.TempDir(), 100)
	results := apply(t, running, 1, history...)
	if r := results[4]; r.Err != nil || r.BaseOffset != 2 {
		t.Fatalf("expire: %+v, want the horizon 2", r)
	}
	if got := running.Log().ProducerHorizon(); got != 2 {
		t.Fatalf("horizon %d, want 2", got)
	}
	dir := t.TempDir()
	first, _ := openSM(t, dir, 100)
	apply(t, first, 1, history...)
	closeSM(t, first)
	reopened, _ := openSM(t, dir, 100) // requires the sidecars to agree with every header
	recovered, _ := openSMWithSource(t, t.TempDir(), 100, &peerLog{log: running.Log()})
	if err := recovered.RecoverFromSnapshot(snapshotOf(t, running), nil); err != nil {
		t.Fatal(err)
	}
	next := [][]byte{
		produce(1, 7, 0, 2, "f"), // forgotten, goes on: accepted at 5
		produce(1, 8, 0, 2, "e"), // remembered: a duplicate of offset 4
		produce(1, 8, 0, 9, "g"), // remembered: a gap
	}
	want := apply(t, running, uint64(len(history)+1), next...)
	if want[0].Err != nil || want[0].BaseOffset != 5 || want[1].Err != nil || want[1].BaseOffset != 4 || want[2].Err == nil {
		t.Fatalf("running replica decided %+v", want)
	}
	for name, s := range map[string]*StateMachine{"reopened": reopened, "recovered": recovered} {
		if got := apply(t, s, uint64(len(history)+1), next...); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the %s replica decided %v, the running one %v", name, got, want)
		}
		if got := s.Log().ProducerHorizon(); got != 2 {
			t.Fatalf("%s: horizon %d, want 2", name, got)
		}
	}
	// The horizon never passes the log end nor moves back.
	apply(t, running, uint64(len(history)+len(next)+1), ExpireProducersCommand(1000), ExpireProducersCommand(3))
	if _, end := running.Log().Offsets(); running.Log().ProducerHorizon() != end {
		t.Fatalf("horizon %d, want the log end %d", running.Log().ProducerHorizon(), end)
	}
}

// A checkpoint file written before producer horizons (two 40-byte slots)
// is read, and the first checkpoint written after it leaves it intact.
func TestLegacyCheckpointIsRead(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	apply(t, s, 1, produce(1, -1, 0, 0, "a", "b"))
	closeSM(t, s)
	path := filepath.Join(dir, "checkpoint")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ck, _ := readCheckpoint(mustOpenFile(t, path))
	legacy := make([]byte, 2*legacyCheckpointSlot)
	for slot, seq := range []uint64{ck.Seq - 1, ck.Seq} {
		at := int(seq%2) * legacyCheckpointSlot
		binary.BigEndian.PutUint64(legacy[at:], seq)
		binary.BigEndian.PutUint64(legacy[at+8:], ck.AppliedIndex-uint64(1-slot))
		binary.BigEndian.PutUint64(legacy[at+16:], uint64(ck.NextOffset))
		binary.BigEndian.PutUint64(legacy[at+24:], uint64(ck.LogStartOffset))
		binary.BigEndian.PutUint32(legacy[at+32:], crc32.Checksum(legacy[at:at+32], crc32c))
	}
	if len(b) < checkpointSlotsAt {
		t.Fatalf("checkpoint file of %d bytes", len(b))
	}
	if err := os.WriteFile(path, legacy, 0o644); err != nil {
		t.Fatal(err)
	}
	s, applied := openSM(t, dir, 0)
	if applied != ck.AppliedIndex {
		t.Fatalf("opened at %d from the legacy checkpoint, want %d", applied, ck.AppliedIndex)
	}
	apply(t, s, applied+1, produce(1, -1, 0, 0, "c"))
	closeSM(t, s)
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(after[:len(legacy)], legacy) {
		t.Fatalf("legacy slots changed (%v)", err)
	}
	if s, applied := openSM(t, dir, 0); applied != ck.AppliedIndex+1 {
		t.Fatalf("reopened at %d, want %d", applied, ck.AppliedIndex+1)
	} else if got, _ := readValues(t, s.Log(), 0); !equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("records %v", got)
	}
}

func mustOpenFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
