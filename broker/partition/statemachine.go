package partition

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	sm "github.com/lni/dragonboat/v3/statemachine"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Command kinds, the first byte of every partition Raft entry.
const (
	cmdProduce       byte = 1
	cmdDeleteRecords byte = 2
)

// ProduceCommand encodes the Raft entry for appending batches that
// SplitBatches accepted. epoch is the proposer's Raft term; the state machine
// keeps epochs monotonic, so a late entry of an old leader cannot go back.
func ProduceCommand(epoch int32, records []byte) []byte {
	cmd := make([]byte, 5, 5+len(records))
	cmd[0] = cmdProduce
	binary.BigEndian.PutUint32(cmd[1:], uint32(epoch))
	return append(cmd, records...)
}

// DeleteRecordsCommand encodes the Raft entry that moves the log start.
func DeleteRecordsCommand(before int64) []byte {
	cmd := make([]byte, 9)
	cmd[0] = cmdDeleteRecords
	binary.BigEndian.PutUint64(cmd[1:], uint64(before))
	return cmd
}

// Result is the outcome of one applied entry.
type Result struct {
	Err            error // a kerr error, or nil
	BaseOffset     int64
	LogStartOffset int64
}

func encodeResult(err error, base, start int64) sm.Result {
	code := uint64(0)
	if err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			code = uint64(uint16(ke.Code))
		} else {
			code = uint64(uint16(kerr.UnknownServerError.Code))
		}
	}
	data := make([]byte, 16)
	binary.BigEndian.PutUint64(data, uint64(base))
	binary.BigEndian.PutUint64(data[8:], uint64(start))
	return sm.Result{Value: code, Data: data}
}

// DecodeResult turns a Dragonboat result back into a Result.
func DecodeResult(r sm.Result) Result {
	out := Result{Err: kerr.ErrorForCode(int16(uint16(r.Value)))}
	if len(r.Data) >= 16 {
		out.BaseOffset = int64(binary.BigEndian.Uint64(r.Data))
		out.LogStartOffset = int64(binary.BigEndian.Uint64(r.Data[8:]))
	}
	return out
}

// SnapshotsRecovered counts partitions this process received as a snapshot
// from their leader, for the broker's metrics.
var SnapshotsRecovered atomic.Int64

// StateMachine is the Dragonboat on-disk state machine of one partition.
type StateMachine struct {
	dir          string
	segmentBytes int64
	log          *Log
	ckFile       *os.File
	ck           checkpoint
}

// NewStateMachine returns the state machine for a partition stored in dir.
func NewStateMachine(dir string, segmentBytes int64) *StateMachine {
	return &StateMachine{dir: dir, segmentBytes: segmentBytes, log: &Log{changed: make(chan struct{}), producer: producers{}}}
}

// Log is the partition's log, for readers. It stays the same object for
// the life of the state machine, also across snapshot recovery.
func (s *StateMachine) Log() *Log { return s.log }

// Open implements sm.IOnDiskStateMachine.
func (s *StateMachine) Open(stop <-chan struct{}) (uint64, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "checkpoint"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	ck, err := readCheckpoint(f)
	if err != nil {
		f.Close()
		return 0, err
	}
	if err := s.load(ck); err != nil {
		f.Close()
		return 0, err
	}
	s.ckFile, s.ck = f, ck
	return ck.AppliedIndex, nil
}

// load (re)opens the segments and swaps them into the shared Log.
func (s *StateMachine) load(ck checkpoint) error {
	fresh, err := openLog(s.dir, s.segmentBytes, ck)
	if err != nil {
		return err
	}
	l := s.log
	l.mu.Lock()
	old := l.segs
	l.dir, l.segmentBytes = fresh.dir, fresh.segmentBytes
	l.segs, l.batches, l.next, l.start, l.epochs, l.producer = fresh.segs, fresh.batches, fresh.next, fresh.start, fresh.epochs, fresh.producer
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	for _, seg := range old {
		seg.f.Close()
	}
	return nil
}

// Update implements sm.IOnDiskStateMachine. All entries of one call share a
// single fsync of the segment before the checkpoint moves.
func (s *StateMachine) Update(entries []sm.Entry) ([]sm.Entry, error) {
	wrote := false
	for i := range entries {
		res, appended, err := s.apply(entries[i].Cmd)
		if err != nil {
			return nil, err
		}
		wrote = wrote || appended
		entries[i].Result = res
	}
	start, next := s.log.Offsets()
	s.ck.AppliedIndex, s.ck.NextOffset, s.ck.LogStartOffset = entries[len(entries)-1].Index, next, start
	if err := s.persist(); err != nil {
		return nil, err
	}
	if wrote {
		s.log.publish()
	}
	return entries, nil
}

// apply runs one command. Rejections (bad sequence, corrupt bytes) are
// results; only storage failures are errors, and those stop the replica
// rather than let it diverge from its peers.
func (s *StateMachine) apply(cmd []byte) (sm.Result, bool, error) {
	l := s.log
	if len(cmd) == 0 {
		return encodeResult(kerr.InvalidRequest, -1, l.start), false, nil
	}
	switch cmd[0] {
	case cmdProduce:
		if len(cmd) < 5 {
			return encodeResult(kerr.CorruptMessage, -1, l.start), false, nil
		}
		epoch := int32(binary.BigEndian.Uint32(cmd[1:]))
		if n := len(l.epochs); n > 0 && l.epochs[n-1].Epoch > epoch {
			epoch = l.epochs[n-1].Epoch
		}
		batches, err := SplitBatches(cmd[5:], 0)
		if err != nil {
			return encodeResult(err, -1, l.start), false, nil
		}
		// All batches of a request are judged before any is written, so a
		// request is applied whole or not at all.
		var dupOffset int64 = -1
		for i, b := range batches {
			h, _ := readHeader(b)
			v := l.producer.check(h, l.start)
			if v.err != nil {
				return encodeResult(v.err, -1, l.start), false, nil
			}
			if v.duplicate && i == 0 {
				dupOffset = v.offset
			}
		}
		if dupOffset >= 0 {
			return encodeResult(nil, dupOffset, l.start), false, nil
		}
		base := l.next
		for _, b := range batches {
			if _, err := l.append(b, epoch); err != nil {
				// Not a result: whether a disk is full differs between
				// replicas, and a result must not. The leader refuses
				// produce before its disk fills (see the broker's
				// free-space guard); a replica that fails here stops and
				// replays the entry from the Raft log when restarted.
				return sm.Result{}, false, fmt.Errorf("partition %s: append: %w", s.dir, err)
			}
		}
		return encodeResult(nil, base, l.start), true, nil
	case cmdDeleteRecords:
		if len(cmd) < 9 {
			return encodeResult(kerr.InvalidRequest, -1, l.start), false, nil
		}
		before := int64(binary.BigEndian.Uint64(cmd[1:]))
		if before < 0 || before > l.next {
			return encodeResult(kerr.OffsetOutOfRange, -1, l.start), false, nil
		}
		l.dropBefore(before)
		return encodeResult(nil, before, l.start), false, nil
	}
	return encodeResult(kerr.InvalidRequest, -1, l.start), false, nil
}

// Lookup implements sm.IOnDiskStateMachine; readers use Log directly.
func (s *StateMachine) Lookup(interface{}) (interface{}, error) {
	start, next := s.log.Offsets()
	return [2]int64{start, next}, nil
}

// Sync implements sm.IOnDiskStateMachine.
func (s *StateMachine) Sync() error {
	if err := s.persist(); err != nil {
		return err
	}
	if err := s.ckFile.Sync(); err != nil {
		return fmt.Errorf("partition %s: checkpoint fsync: %w", s.dir, err)
	}
	return nil
}

// persist fsyncs the segments, then writes the checkpoint: a checkpoint on
// disk never names data that is not.
func (s *StateMachine) persist() error {
	if err := s.log.sync(); err != nil {
		return fmt.Errorf("partition %s: fsync: %w", s.dir, err)
	}
	// Slots alternate by Seq, so each write keeps the previous checkpoint
	// intact in the other slot.
	s.ck.Seq++
	if err := writeCheckpoint(s.ckFile, s.ck); err != nil {
		return fmt.Errorf("partition %s: checkpoint: %w", s.dir, err)
	}
	return nil
}

type snapshotState struct {
	ck    checkpoint
	files []*os.File
	bases []int64
	sizes []int64
}

// PrepareSnapshot implements sm.IOnDiskStateMachine. It keeps its own file
// handles, so segments that retention deletes meanwhile can still be sent.
func (s *StateMachine) PrepareSnapshot() (interface{}, error) {
	l := s.log
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := &snapshotState{ck: s.ck}
	for _, seg := range l.segs {
		f, err := os.Open(seg.path)
		if err != nil {
			for _, f := range st.files {
				f.Close()
			}
			return nil, err
		}
		st.files, st.bases, st.sizes = append(st.files, f), append(st.bases, seg.base), append(st.sizes, seg.size)
	}
	return st, nil
}

const snapshotMagic = "RAFTKA-PARTITION-1"

// SaveSnapshot implements sm.IOnDiskStateMachine.
func (s *StateMachine) SaveSnapshot(state interface{}, w io.Writer, done <-chan struct{}) error {
	st := state.(*snapshotState)
	defer func() {
		for _, f := range st.files {
			f.Close()
		}
	}()
	bw := bufio.NewWriterSize(w, 256<<10)
	hdr := binary.BigEndian.AppendUint64([]byte(snapshotMagic), st.ck.AppliedIndex)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(st.ck.NextOffset))
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(st.ck.LogStartOffset))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(st.files)))
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	for i, f := range st.files {
		select {
		case <-done:
			return sm.ErrSnapshotStopped
		default:
		}
		seg := binary.BigEndian.AppendUint64(nil, uint64(st.bases[i]))
		seg = binary.BigEndian.AppendUint64(seg, uint64(st.sizes[i]))
		if _, err := bw.Write(seg); err != nil {
			return err
		}
		if _, err := io.Copy(bw, io.NewSectionReader(f, 0, st.sizes[i])); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// RecoverFromSnapshot implements sm.IOnDiskStateMachine: it replaces the
// whole partition with the leader's copy.
func (s *StateMachine) RecoverFromSnapshot(r io.Reader, done <-chan struct{}) error {
	br := bufio.NewReaderSize(r, 256<<10)
	hdr := make([]byte, len(snapshotMagic)+28)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return err
	}
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic {
		return errors.New("partition: not a partition snapshot")
	}
	p := hdr[len(snapshotMagic):]
	ck := checkpoint{Seq: s.ck.Seq + 1, AppliedIndex: binary.BigEndian.Uint64(p),
		NextOffset: int64(binary.BigEndian.Uint64(p[8:])), LogStartOffset: int64(binary.BigEndian.Uint64(p[16:]))}
	n := binary.BigEndian.Uint32(p[24:])
	old, _ := filepath.Glob(filepath.Join(s.dir, "*.log"))
	for _, name := range old {
		if err := os.Remove(name); err != nil {
			return err
		}
	}
	for i := uint32(0); i < n; i++ {
		select {
		case <-done:
			return sm.ErrSnapshotStopped
		default:
		}
		var segHdr [16]byte
		if _, err := io.ReadFull(br, segHdr[:]); err != nil {
			return err
		}
		base, size := int64(binary.BigEndian.Uint64(segHdr[:])), int64(binary.BigEndian.Uint64(segHdr[8:]))
		if err := writeFileSynced(filepath.Join(s.dir, segmentName(base)), io.LimitReader(br, size), size); err != nil {
			return err
		}
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	if err := writeCheckpoint(s.ckFile, ck); err != nil {
		return err
	}
	if err := s.ckFile.Sync(); err != nil {
		return err
	}
	s.ck = ck
	if err := s.load(ck); err != nil {
		return err
	}
	SnapshotsRecovered.Add(1)
	return nil
}

func writeFileSynced(path string, r io.Reader, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if n, err := io.Copy(f, r); err != nil || n != size {
		return fmt.Errorf("partition: snapshot segment %s: wrote %d of %d bytes: %v", path, n, size, err)
	}
	return f.Sync()
}

// Close implements sm.IOnDiskStateMachine.
func (s *StateMachine) Close() error {
	s.log.Close()
	if s.ckFile != nil {
		return s.ckFile.Close()
	}
	return nil
}
