package partition

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"

	pb "github.com/lni/dragonboat/v3/raftpb"
	sm "github.com/lni/dragonboat/v3/statemachine"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/broker/frames"
	"github.com/raftka/raftka/broker/raftlog"
)

// framedTwin is a replica that keeps its batches in a frame log, fed the
// same entries as one that writes them out.
type framedTwin struct {
	t              *testing.T
	written        *StateMachine
	framed         *StateMachine
	writtenDir     string
	framedDir      string
	frames         *frames.Log
	locs           map[uint64]frames.Loc
	index, segment uint64
	expectErrors   bool
	misplace       bool // locations off by one byte
}

func newFramedTwin(t *testing.T, segmentBytes, frameFileBytes int64) *framedTwin {
	tw := &framedTwin{t: t, writtenDir: t.TempDir(), framedDir: t.TempDir(), locs: map[uint64]frames.Loc{}, segment: uint64(segmentBytes)}
	fl, err := frames.Open(filepath.Join(tw.framedDir, "frames"), frameFileBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fl.Close)
	tw.frames = fl
	tw.written, _ = openSM(t, tw.writtenDir, segmentBytes)
	tw.framed = tw.openFramed()
	return tw
}

func (tw *framedTwin) openFramed() *StateMachine {
	s := NewStateMachine(filepath.Join(tw.framedDir, "log"), int64(tw.segment), nil, slog.New(slog.NewTextHandler(testWriter{tw.t}, nil)))
	s.UseFrames(tw.frames, func(index uint64, cmdLen int) (frames.Loc, bool) {
		l, ok := tw.locs[index]
		if !ok {
			return frames.Loc{}, false
		}
		return raftlog.CommandIn(l, cmdLen)
	})
	if _, err := s.Open(nil); err != nil {
		tw.t.Fatal(err)
	}
	tw.t.Cleanup(func() { _ = s.Close() })
	requireOpenedAsAFullScan(tw.t, s)
	return s
}

// apply frames the commands as the Raft log store does (a marshaled Raft
// entry each), then applies them to both replicas, which must agree.
func (tw *framedTwin) apply(cmds ...[]byte) {
	tw.t.Helper()
	var payloads []frames.Payload
	var written, framed []sm.Entry
	for _, cmd := range cmds {
		tw.index++
		payloads = append(payloads, &pb.Entry{Index: tw.index, Term: 3, Cmd: cmd})
		written = append(written, sm.Entry{Index: tw.index, Cmd: bytes.Clone(cmd)})
		framed = append(framed, sm.Entry{Index: tw.index, Cmd: bytes.Clone(cmd)})
	}
	locs, err := tw.frames.Append(payloads)
	if err == nil {
		err = tw.frames.Sync()
	}
	if err != nil {
		tw.t.Fatal(err)
	}
	defer tw.frames.Settle(locs[0].File) // recorded below, as the Raft log store records them
	for i, l := range locs {
		if tw.misplace {
			l.Off++ // where the Raft log store says, but wrong
		}
		tw.locs[tw.index-uint64(len(locs))+uint64(i)+1] = l
	}
	wres, err := tw.written.Update(written)
	if err != nil {
		tw.t.Fatal(err)
	}
	fres, err := tw.framed.Update(framed)
	if err != nil {
		tw.t.Fatal(err)
	}
	for i := range wres {
		if r := DecodeResult(wres[i].Result); r.Err != nil && !tw.expectErrors {
			tw.t.Fatalf("entry %d: %v", wres[i].Index, r.Err)
		}
		if w, f := DecodeResult(wres[i].Result), DecodeResult(fres[i].Result); !reflect.DeepEqual(w, f) {
			tw.t.Fatalf("entry %d: written %+v, framed %+v", wres[i].Index, w, f)
		}
	}
}

// requireSameReads reads both logs at every offset with several sizes.
func (tw *framedTwin) requireSameReads(what string) {
	tw.t.Helper()
	ws, wn := tw.written.Log().Offsets()
	fs, fn := tw.framed.Log().Offsets()
	if ws != fs || wn != fn {
		tw.t.Fatalf("%s: written log [%d, %d), framed [%d, %d)", what, ws, wn, fs, fn)
	}
	// Where segments end may differ (a framed replica starts one where
	// batches change kind), and a read stops there; the batches may not.
	for off := ws; off < wn; off++ {
		w, werr := tw.written.Log().Read(off, 1)
		f, ferr := tw.framed.Log().Read(off, 1)
		if werr != nil || ferr != nil || !bytes.Equal(w, f) {
			tw.t.Fatalf("%s: the batch at %d: %d bytes (%v) written, %d bytes (%v) framed, not the same", what, off, len(w), werr, len(f), ferr)
		}
	}
	for _, max := range []int32{200, 3000, 1 << 20} {
		w, f := readAll(tw.t, tw.written.Log(), ws, max), readAll(tw.t, tw.framed.Log(), ws, max)
		if !bytes.Equal(w, f) {
			tw.t.Fatalf("%s: reading all up to %d bytes a time: %d bytes written, %d framed, not the same", what, max, len(w), len(f))
		}
	}
	if w, f := tw.written.Log().Producers(), tw.framed.Log().Producers(); !reflect.DeepEqual(w, f) {
		tw.t.Fatalf("%s: producers %+v written, %+v framed", what, w, f)
	}
}

// A replica whose batches stay in the frame log serves the same bytes as
// one that writes them out: offsets and leader epochs written into the
// headers, several batches to an entry, retried batches not stored twice,
// segments rolled and deleted, batches stamped with the append time written
// out beside framed ones, and all of it again after a reopen.
func TestFramedSegmentsReadAsWrittenOnes(t *testing.T) {
	tw := newFramedTwin(t, 2048, 16<<10)
	const producer = 7
	seq := int32(0)
	batch := func(n int) []byte {
		var vals []string
		for i := range n {
			vals = append(vals, fmt.Sprintf("value %d-%d", seq, i))
		}
		b := brokertest.RecordBatchAt(1_700_000_000_000+int64(seq), producer, 0, seq, vals...)
		seq += int32(n)
		return b
	}
	for i := range 40 {
		first := batch(1 + i%5)
		tw.apply(ProduceCommand(int32(1+i/10), first))
		if i%4 == 1 {
			// Several batches in one entry (a producer without ids may
			// send them so).
			two := append(brokertest.RecordBatchAt(1_700_000_000_000, -1, 0, 0, "x", "y"), brokertest.RecordBatchAt(1_700_000_000_000, -1, 0, 0, "z")...)
			tw.apply(ProduceCommand(int32(1+i/10), two))
		}
		if i%7 == 3 {
			// A producer's retry of its last request: the same batches.
			tw.apply(ProduceCommand(int32(1+i/10), bytes.Clone(first)))
		}
		if i%9 == 4 {
			tw.apply(ProduceAppendTimeCommand(int32(1+i/10), 1_800_000_000_000, batch(3)))
		}
		if i == 25 {
			_, next := tw.written.Log().Offsets()
			tw.apply(DeleteRecordsCommand(next / 2))
		}
	}
	tw.requireSameReads("applied")
	if !hasFramedSegments(tw.framed.Log()) {
		t.Fatal("the framed replica wrote every batch out")
	}
	if err := tw.framed.Close(); err != nil {
		t.Fatal(err)
	}
	tw.framed = tw.openFramed()
	tw.requireSameReads("reopened")
	tw.apply(ProduceCommand(5, batch(4)))
	tw.requireSameReads("appended after the reopen")
}

// An entry that is not in the frame log, or not where its location says,
// has its batches written out, and reads stay right.
func TestFramedReplicaWritesOutWhatItCannotFind(t *testing.T) {
	tw := newFramedTwin(t, 0, 0)
	tw.apply(ProduceCommand(1, brokertest.RecordBatchAt(1_700_000_000_000, -1, 0, 0, "a", "b")))
	tw.misplace = true
	tw.apply(ProduceCommand(1, brokertest.RecordBatchAt(1_700_000_000_001, -1, 0, 0, "c")))
	tw.misplace = false
	tw.requireSameReads("misplaced")
	tw.index++ // an entry the Raft log store kept itself
	cmd := ProduceCommand(1, brokertest.RecordBatchAt(1_700_000_000_002, -1, 0, 0, "d"))
	for _, s := range []*StateMachine{tw.written, tw.framed} {
		if _, err := s.Update([]sm.Entry{{Index: tw.index, Cmd: bytes.Clone(cmd)}}); err != nil {
			t.Fatal(err)
		}
	}
	tw.requireSameReads("kept by the store")
	if kinds := segmentKinds(tw.framed.Log()); !reflect.DeepEqual(kinds, []bool{true, false}) {
		t.Fatalf("segments framed: %v, want the first only (offsets 0-1), then one written out (2-3)", kinds)
	}
}

func segmentKinds(l *Log) []bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []bool
	for _, seg := range l.segs {
		out = append(out, isFramed(seg))
	}
	return out
}

func hasFramedSegments(l *Log) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, seg := range l.segs {
		if isFramed(seg) {
			return true
		}
	}
	return false
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// readAll reads the log from offset from to its end, max bytes a read.
func readAll(t *testing.T, l *Log, from int64, max int32) []byte {
	t.Helper()
	var out []byte
	for {
		b, err := l.Read(from, max)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			return out
		}
		out = append(out, b...)
		for len(b) > 0 {
			h, err := readHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			from = h.BaseOffset + int64(h.LastDelta) + 1
			b = b[h.Length:]
		}
	}
}

// Compaction cleans framed segments into segments of their own, as it
// cleans written ones, and the frame files their batches lay in go once
// Raft no longer needs them either; the cleaned log survives a reopen.
func TestFramedSegmentsAreCompacted(t *testing.T) {
	tw := newFramedTwin(t, 1024, 1024)
	const now = 1_700_000_000_000
	for i := range 60 {
		tw.apply(ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), now, -1, 0, kv{fmt.Sprint("k", i%4), val(fmt.Sprint(i))})))
	}
	framesBefore, _ := tw.frames.Files()
	tw.frames.ReleaseRaft(frames.NoFile) // as after a snapshot
	opts := CleanOptions{NowMs: now + 1000, DeleteRetentionMs: 1000}
	for _, s := range []*StateMachine{tw.written, tw.framed} {
		if res, err := s.Clean(opts); err != nil || res.RecordsRemoved == 0 {
			t.Fatalf("clean: %+v %v", res, err)
		}
	}
	tw.requireSameReads("cleaned")
	if kinds := segmentKinds(tw.framed.Log()); kinds[0] {
		t.Fatalf("segments framed after cleaning: %v, want the cleaned ones written out", kinds)
	}
	if after, _ := tw.frames.Files(); after >= framesBefore {
		t.Fatalf("%d frame files before cleaning, %d after: none went", framesBefore, after)
	}
	if err := tw.framed.Close(); err != nil {
		t.Fatal(err)
	}
	tw.framed = tw.openFramed()
	tw.requireSameReads("cleaned, reopened")
}

// A framed segment of many small batches keeps a mark per 4 KiB of them
// in memory, as a segment's sparse index does, not a record per batch.
func TestFramedSegmentKeepsMarksNotRecords(t *testing.T) {
	tw := newFramedTwin(t, 0, 0)
	for i := range 1000 {
		tw.apply(ProduceCommand(1, brokertest.RecordBatchAt(1_700_000_000_000, -1, 0, 0, fmt.Sprint("small ", i))))
	}
	tw.requireSameReads("small batches")
	l := tw.framed.Log()
	l.mu.RLock()
	ff := l.segs[0].f.(*framedFile)
	count, marks, size := ff.count, len(ff.marks), ff.size
	l.mu.RUnlock()
	if count != 1000 || int64(marks) > size/framedMarkBytes+1 {
		t.Fatalf("%d records, %d marks in memory for %d bytes of batches", count, marks, size)
	}
}

// TestFramedReplicaRecoveringFromASnapshotKeepsNothingStale: a framed
// replica whose log ends before the leader's snapshot starts (records
// deleted everywhere since) recovers from the snapshot by starting empty
// at its log start; its own framed segments must not survive that reset,
// before or after it reopens.
func TestFramedReplicaRecoveringFromASnapshotKeepsNothingStale(t *testing.T) {
	src, _ := openSM(t, t.TempDir(), 200)
	for i := 0; i < 20; i++ {
		apply(t, src, uint64(i+1), produce(2, 5, 0, int32(i), "value"))
	}
	apply(t, src, 21, DeleteRecordsCommand(4))
	snap := snapshotOf(t, src)

	tw := newFramedTwin(t, 200, 1<<20)
	for i := 0; i < 2; i++ {
		tw.apply(produce(1, -1, 0, 0, "stale"))
	}
	if !hasFramedSegments(tw.framed.Log()) {
		t.Fatal("the replica kept no framed segments to begin with")
	}
	tw.framed.source = &peerLog{log: src.Log()}
	if err := tw.framed.RecoverFromSnapshot(snap, nil); err != nil {
		t.Fatal(err)
	}
	check := func(when string, l *Log) {
		t.Helper()
		if s, e := l.Offsets(); s != 4 || e != 20 {
			t.Fatalf("%s: offsets [%d, %d), want [4, 20)", when, s, e)
		}
		want, _ := readValues(t, src.Log(), 4)
		if got, _ := readValues(t, l, 4); !equal(got, want) {
			t.Fatalf("%s: read %v, want %v", when, got, want)
		}
		stale, _ := filepath.Glob(filepath.Join(tw.framedDir, "log", "*"+framedSuffix))
		if len(stale) > 0 {
			t.Fatalf("%s: framed segments of the replaced log remain: %v", when, stale)
		}
	}
	check("recovered", tw.framed.Log())
	if err := tw.framed.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := NewStateMachine(filepath.Join(tw.framedDir, "log"), 200, nil, nil)
	reopened.UseFrames(tw.frames, func(uint64, int) (frames.Loc, bool) { return frames.Loc{}, false })
	if _, err := reopened.Open(nil); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reopened.Close() }()
	check("reopened", reopened.Log())
}
