package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	sm "github.com/lni/dragonboat/v3/statemachine"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/frames"
	"github.com/raftka/raftka/broker/internal/durable"
)

// Command kinds, the first byte of every partition Raft entry.
const (
	cmdProduce       byte = 1
	cmdDeleteRecords byte = 2
	// cmdProduceAppendTime is cmdProduce for a topic whose timestamps are
	// the log append time: the leader's clock, read when it proposed.
	cmdProduceAppendTime byte = 3
	// cmdExpireProducers moves the producer horizon (Log.expireProducers).
	cmdExpireProducers byte = 4
	// cmdProduceTxn and cmdProduceTxnAppendTime are the produce commands
	// of transactional batches: they carry the coordinator's number of
	// the transaction the leader found them to belong to (txn.go).
	cmdProduceTxn           byte = 5
	cmdProduceTxnAppendTime byte = 6
	// cmdWriteMarker appends a transaction marker (MarkerBatch).
	cmdWriteMarker byte = 7
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

// ProduceAppendTimeCommand is ProduceCommand for a topic with
// message.timestamp.type=LogAppendTime: every batch is stamped with
// appendTimeMs when applied, the time travelling in the entry so that every
// replica stamps the same.
func ProduceAppendTimeCommand(epoch int32, appendTimeMs int64, records []byte) []byte {
	cmd := make([]byte, 13, 13+len(records))
	cmd[0] = cmdProduceAppendTime
	binary.BigEndian.PutUint32(cmd[1:], uint32(epoch))
	binary.BigEndian.PutUint64(cmd[5:], uint64(appendTimeMs))
	return append(cmd, records...)
}

// ProduceTxnCommand is ProduceCommand for transactional batches of
// transaction seq; appendTimeMs is -1 unless the topic stamps the log
// append time.
func ProduceTxnCommand(epoch int32, seq, appendTimeMs int64, records []byte) []byte {
	kind, head := cmdProduceTxn, 13
	if appendTimeMs >= 0 {
		kind, head = cmdProduceTxnAppendTime, 21
	}
	cmd := make([]byte, head, head+len(records))
	cmd[0] = kind
	binary.BigEndian.PutUint32(cmd[1:], uint32(epoch))
	binary.BigEndian.PutUint64(cmd[5:], uint64(seq))
	if appendTimeMs >= 0 {
		binary.BigEndian.PutUint64(cmd[13:], uint64(appendTimeMs))
	}
	return append(cmd, records...)
}

// WriteMarkerCommand encodes the Raft entry that appends a transaction
// marker, a batch MarkerBatch made.
func WriteMarkerCommand(epoch int32, batch []byte) []byte {
	cmd := make([]byte, 5, 5+len(batch))
	cmd[0] = cmdWriteMarker
	binary.BigEndian.PutUint32(cmd[1:], uint32(epoch))
	return append(cmd, batch...)
}

// DeleteRecordsCommand encodes the Raft entry that moves the log start.
func DeleteRecordsCommand(before int64) []byte {
	cmd := make([]byte, 9)
	cmd[0] = cmdDeleteRecords
	binary.BigEndian.PutUint64(cmd[1:], uint64(before))
	return cmd
}

// ExpireProducersCommand encodes the Raft entry that forgets the producers
// whose batches all end below offset.
func ExpireProducersCommand(offset int64) []byte {
	cmd := make([]byte, 9)
	cmd[0] = cmdExpireProducers
	binary.BigEndian.PutUint64(cmd[1:], uint64(offset))
	return cmd
}

// Result is the outcome of one applied entry.
type Result struct {
	Err            error // a kerr error, or nil
	BaseOffset     int64
	LogStartOffset int64
	// Duplicate: an idempotent producer's retry of a batch the log holds,
	// answered with that batch's offset and not written again.
	Duplicate bool
}

// resultDuplicate marks a duplicate's result, after the two offsets.
const resultDuplicate = 1

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
	out.Duplicate = len(r.Data) > 16 && r.Data[16] == resultDuplicate
	return out
}

// SnapshotsRecovered counts partition replicas this process caught up from
// a snapshot, for the broker's metrics.
var SnapshotsRecovered atomic.Int64

// StateMachine is the Dragonboat on-disk state machine of one partition.
type StateMachine struct {
	dir    string
	log    *Log
	ckFile *os.File
	ck     checkpoint
	// closed is closed by Close: Dragonboat closes a stopped replica's
	// state machine later, on its own goroutine, and a replica restarted
	// on the same directory waits for it.
	closed    chan struct{}
	closeOnce sync.Once

	source Source
	logger *slog.Logger

	// cleaning keeps a compaction pass and a change of the whole set of
	// segment files (snapshot recovery, Close) apart.
	cleaning sync.Mutex

	// frames and locate, when set (UseFrames), keep produced batches where
	// the Raft log store wrote them.
	frames frames.Reader
	locate Locate

	// Observed by the broker to decide when to compact the Raft log; not
	// part of the replicated state.
	appliedIndex atomic.Uint64
	appliedBytes atomic.Uint64
}

// AppliedProgress is the index of the last applied Raft entry and the bytes
// of commands applied since this state machine was opened.
func (s *StateMachine) AppliedProgress() (index, bytes uint64) {
	return s.appliedIndex.Load(), s.appliedBytes.Load()
}

// A Source serves a partition's records from its other replicas, to a
// replica catching up from a snapshot.
type Source interface {
	// Fetch returns whole record batches from offset from on, the first of
	// them holding from, about maxBytes of them, from any replica that has
	// them. With no records it returns the log start offset of the replica
	// asked, which is beyond from when the records were deleted.
	Fetch(ctx context.Context, from int64, maxBytes int32) (data []byte, logStart int64, err error)
}

const (
	catchUpFetchBytes = 8 << 20
	catchUpBackoff    = 100 * time.Millisecond
)

// SnapshotBytesFetched counts record bytes fetched from peers while
// recovering from snapshots, for the broker's metrics.
var SnapshotBytesFetched atomic.Int64

// NewStateMachine returns the state machine for a partition stored in dir;
// source serves the records a snapshot names but this replica lacks.
func NewStateMachine(dir string, segmentBytes int64, source Source, logger *slog.Logger) *StateMachine {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &StateMachine{dir: dir, source: source, logger: logger, closed: make(chan struct{}),
		log: &Log{changed: make(chan struct{}), producer: producers{}}}
	s.log.segmentBytes.Store(segmentBytes)
	return s
}

// UseFrames, called before Open, makes the state machine keep produced
// batches where the Raft log store wrote its entries, in the partition's
// frame log fl, instead of writing them again (docs/design/write-once-storage.md).
// locate gives where an entry's command lies in fl, if it does.
func (s *StateMachine) UseFrames(fl frames.Reader, locate Locate) {
	s.frames, s.locate = fl, locate
	fl.SetFileBytes(s.log.segmentBytes.Load())
}

// SetSegmentLimits sets segment.bytes and segment.ms for the segments
// rolled from now on (0 is the default size, and no time limit).
//
// The frame log's files are as large as segments: each goes whole once
// retention passed it, so its size is what disk use exceeds retention by.
func (s *StateMachine) SetSegmentLimits(bytes, ms int64) {
	s.log.segmentBytes.Store(bytes)
	s.log.segmentMs.Store(ms)
	if s.frames != nil {
		s.frames.SetFileBytes(bytes)
	}
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
	s.appliedIndex.Store(ck.AppliedIndex)
	return ck.AppliedIndex, nil
}

// load (re)opens the segments and swaps them into the shared Log.
func (s *StateMachine) load(ck checkpoint) error {
	fresh, err := openLog(s.dir, ck, s.frames)
	if err != nil {
		return err
	}
	l := s.log
	l.mu.Lock()
	old := append(l.segs, l.doomed...)
	l.dir, l.frames = fresh.dir, fresh.frames
	l.segs, l.next, l.start, l.horizon, l.epochs, l.producer, l.txn = fresh.segs, fresh.next, fresh.start, fresh.horizon, fresh.epochs, fresh.producer, fresh.txn
	l.doomed, l.cleanPoint = nil, 0 // openLog removed the doomed files
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	for _, seg := range old {
		_ = seg.f.Close()
	}
	l.releaseFrames()
	return nil
}

// Update implements sm.IOnDiskStateMachine. It makes nothing durable: the
// entries are in a majority's Raft logs already, and Dragonboat calls Sync
// before it compacts them, so after a crash the replica reopens at its
// last synced checkpoint and Raft applies the rest again (openLog drops
// what lies beyond the checkpoint). An fsync here would sit in every
// produce's path, after the commit. Only segments that retention or
// DeleteRecords dropped wait for a durable checkpoint past them.
func (s *StateMachine) Update(entries []sm.Entry) ([]sm.Entry, error) {
	wrote := false
	var bytes uint64
	for i := range entries {
		res, appended, err := s.apply(entries[i].Index, entries[i].Cmd)
		if err != nil {
			return nil, err
		}
		wrote = wrote || appended
		entries[i].Result = res
		bytes += uint64(len(entries[i].Cmd))
	}
	start, next := s.log.Offsets()
	s.ck.AppliedIndex, s.ck.NextOffset, s.ck.LogStartOffset = entries[len(entries)-1].Index, next, start
	s.ck.ProducerHorizon = s.log.ProducerHorizon()
	if s.log.hasDoomed() {
		// Deleted segments leave the disk only under a durable checkpoint
		// past them; records deleted are rare enough to pay its fsyncs.
		if err := s.Sync(); err != nil {
			return nil, err
		}
		s.log.removeDoomed()
	}
	if wrote {
		s.log.publish()
	}
	s.appliedBytes.Add(bytes)
	s.appliedIndex.Store(s.ck.AppliedIndex)
	return entries, nil
}

// apply runs one command. Rejections (bad sequence, corrupt bytes) are
// results; only storage failures are errors, and those stop the replica
// rather than let it diverge from its peers.
func (s *StateMachine) apply(index uint64, cmd []byte) (sm.Result, bool, error) {
	l := s.log
	if len(cmd) == 0 {
		return encodeResult(kerr.InvalidRequest, -1, l.start), false, nil
	}
	switch cmd[0] {
	case cmdProduce, cmdProduceAppendTime, cmdProduceTxn, cmdProduceTxnAppendTime:
		pc, ok := parseProduce(cmd)
		if !ok {
			return encodeResult(kerr.CorruptMessage, -1, l.start), false, nil
		}
		return s.applyProduce(index, cmd, pc)
	case cmdWriteMarker:
		return s.applyMarker(index, cmd)
	case cmdDeleteRecords:
		if len(cmd) < 9 {
			return encodeResult(kerr.InvalidRequest, -1, l.start), false, nil
		}
		before := int64(binary.BigEndian.Uint64(cmd[1:]))
		if before < 0 || before > l.next {
			return encodeResult(kerr.OffsetOutOfRange, -1, l.start), false, nil
		}
		// Never past an open transaction's first record: the log start
		// stays at or below the last stable offset, so the transaction
		// table is what its batches from the start give.
		l.dropBefore(min(before, l.LastStable()))
		return encodeResult(nil, before, l.start), false, nil
	case cmdExpireProducers:
		if len(cmd) < 9 {
			return encodeResult(kerr.InvalidRequest, -1, l.start), false, nil
		}
		l.expireProducers(int64(binary.BigEndian.Uint64(cmd[1:])))
		return encodeResult(nil, l.ProducerHorizon(), l.start), false, nil
	}
	return encodeResult(kerr.InvalidRequest, -1, l.start), false, nil
}

// produceCmd is a produce command's head: the proposer's epoch, the
// append time (-1 unless stamped), the transaction it belongs to, and
// where its records begin.
type produceCmd struct {
	epoch      int32
	appendTime int64
	txn        bool
	seq        int64
	records    int
}

func parseProduce(cmd []byte) (produceCmd, bool) {
	pc := produceCmd{appendTime: -1, records: 5}
	switch cmd[0] {
	case cmdProduceAppendTime:
		pc.records = 13
	case cmdProduceTxn:
		pc.txn, pc.records = true, 13
	case cmdProduceTxnAppendTime:
		pc.txn, pc.records = true, 21
	}
	if len(cmd) < pc.records {
		return pc, false
	}
	pc.epoch = int32(binary.BigEndian.Uint32(cmd[1:]))
	if pc.txn {
		pc.seq = int64(binary.BigEndian.Uint64(cmd[5:]))
	}
	switch cmd[0] {
	case cmdProduceAppendTime:
		pc.appendTime = int64(binary.BigEndian.Uint64(cmd[5:]))
	case cmdProduceTxnAppendTime:
		pc.appendTime = int64(binary.BigEndian.Uint64(cmd[13:]))
	}
	return pc, true
}

// entryEpoch is the leader epoch an entry proposed in epoch is written
// with: never below the last one, so a late entry of an old leader
// cannot go back.
func (l *Log) entryEpoch(epoch int32) int32 {
	if n := len(l.epochs); n > 0 && l.epochs[n-1].Epoch > epoch {
		return l.epochs[n-1].Epoch
	}
	return epoch
}

// applyProduce appends a produce command's batches, all or none.
func (s *StateMachine) applyProduce(index uint64, cmd []byte, pc produceCmd) (sm.Result, bool, error) {
	l := s.log
	epoch := l.entryEpoch(pc.epoch)
	batches, err := SplitBatches(cmd[pc.records:], 0)
	if err != nil {
		return encodeResult(err, -1, l.start), false, nil
	}
	// All batches of a request are judged before any is written, so a
	// request is applied whole or not at all.
	var dupOffset int64 = -1
	for i, b := range batches {
		h, _ := readHeader(b)
		if err := txnVerdict(&l.txn, h, pc); err != nil {
			return encodeResult(err, -1, l.start), false, nil
		}
		v := l.producer.check(h, l.producerStart())
		if v.err != nil {
			return encodeResult(v.err, -1, l.start), false, nil
		}
		if v.duplicate && i == 0 {
			dupOffset = v.offset
		}
	}
	if dupOffset >= 0 {
		res := encodeResult(nil, dupOffset, l.start)
		res.Data = append(res.Data, resultDuplicate)
		return res, false, nil
	}
	base := l.next
	var at []*frames.Loc
	if pc.appendTime < 0 {
		// Stamping the append time changes a batch's bytes, so those
		// batches are written out.
		at = s.batchFrames(index, cmd, pc.records, batches)
	}
	for i, b := range batches {
		if pc.appendTime >= 0 {
			stampAppendTime(b, pc.appendTime)
		}
		var where *frames.Loc
		if at != nil {
			where = at[i]
		}
		if _, err := l.append(b, epoch, where); err != nil {
			// Not a result: whether a disk is full differs between
			// replicas, and a result must not. The leader refuses
			// produce before its disk fills (see the broker's
			// free-space guard); a replica that fails here stops and
			// replays the entry from the Raft log when restarted.
			return sm.Result{}, false, fmt.Errorf("partition %s: append: %w", s.dir, err)
		}
	}
	return encodeResult(nil, base, l.start), true, nil
}

// txnVerdict judges a batch against the transaction table: transactional
// batches come only in a transactional command (its leader checked them
// with the coordinator's state), and a batch that would open a transaction
// must not belong to one already ended here.
func txnVerdict(t *txns, h header, pc produceCmd) error {
	switch {
	case h.isTransactional() != pc.txn:
		return kerr.InvalidTxnState
	case pc.txn && !t.opens(h.ProducerID, pc.seq):
		return kerr.InvalidTxnState
	}
	return nil
}

// applyMarker appends a transaction marker, once: a retried marker of a
// transaction ended here already answers where the first one went.
func (s *StateMachine) applyMarker(index uint64, cmd []byte) (sm.Result, bool, error) {
	l := s.log
	if len(cmd) < 5+batchHeaderLength {
		return encodeResult(kerr.CorruptMessage, -1, l.start), false, nil
	}
	b := cmd[5:]
	h, err := readHeader(b)
	m, ok := readMarker(b)
	if err != nil || !ok || !h.isControl() || !h.isTransactional() || int(h.Length) != len(b) ||
		crc32.Checksum(b[offAttributes:], crc32c) != binary.BigEndian.Uint32(b[offCRC:]) {
		return encodeResult(kerr.CorruptMessage, -1, l.start), false, nil
	}
	if l.txn.endedAlready(h.ProducerID, m.seq) {
		return encodeResult(nil, l.txn.ended[h.ProducerID].Marker, l.start), false, nil
	}
	if st := l.producer[h.ProducerID]; st != nil && h.ProducerEpoch < st.Epoch {
		return encodeResult(kerr.InvalidProducerEpoch, -1, l.start), false, nil
	}
	base := l.next
	at := s.batchFrames(index, cmd, 5, [][]byte{b})
	var where *frames.Loc
	if at != nil {
		where = at[0]
	}
	if _, err := l.append(b, l.entryEpoch(int32(binary.BigEndian.Uint32(cmd[1:]))), where); err != nil {
		return sm.Result{}, false, fmt.Errorf("partition %s: append marker: %w", s.dir, err)
	}
	return encodeResult(nil, base, l.start), true, nil
}

// batchFrames is where each batch of a produce command lies in the frame
// log, or nil when the entry is not there. The first batch's header is
// read back to make sure, so that an entry laid out otherwise than its
// location says is written out rather than served wrong.
func (s *StateMachine) batchFrames(index uint64, cmd []byte, records int, batches [][]byte) []*frames.Loc {
	if s.frames == nil || s.locate == nil || len(batches) == 0 {
		return nil
	}
	at, ok := s.locate(index, len(cmd))
	if !ok {
		return nil
	}
	pos := at.Off + int64(records)
	check := make([]byte, batchHeaderLength)
	if err := s.frames.ReadAt(at.File, check, pos); err != nil || !bytes.Equal(check, batches[0][:batchHeaderLength]) {
		s.logger.Warn("entry is not where its frame says; writing its batches out", "index", index, "error", err)
		return nil
	}
	out := make([]*frames.Loc, len(batches))
	for i, b := range batches {
		out[i] = &frames.Loc{File: at.File, Off: pos, Size: uint32(len(b))}
		pos += int64(len(b))
	}
	return out
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

// PrepareSnapshot implements sm.IOnDiskStateMachine. A snapshot names the
// state at an applied index (its offsets); the records themselves stay in
// the replicas' segments, see RecoverFromSnapshot.
func (s *StateMachine) PrepareSnapshot() (interface{}, error) {
	return s.ck, nil
}

// Snapshot headers: the magic, then the applied index, log end and log
// start, and in the second form the producer horizon too. A snapshot with
// no horizon is written in the first form, which brokers without horizons
// read, so a rolling upgrade does not need the new form early.
const (
	snapshotMagic        = "RAFTKA-PARTITION-2"
	snapshotMagicHorizon = "RAFTKA-PARTITION-3"
)

// SaveSnapshot implements sm.IOnDiskStateMachine.
func (s *StateMachine) SaveSnapshot(state interface{}, w io.Writer, done <-chan struct{}) error {
	ck := state.(checkpoint)
	magic := snapshotMagic
	if ck.ProducerHorizon > 0 {
		magic = snapshotMagicHorizon
	}
	hdr := binary.BigEndian.AppendUint64([]byte(magic), ck.AppliedIndex)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(ck.NextOffset))
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(ck.LogStartOffset))
	if ck.ProducerHorizon > 0 {
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(ck.ProducerHorizon))
	}
	_, err := w.Write(hdr)
	return err
}

// RecoverFromSnapshot implements sm.IOnDiskStateMachine. The snapshot names
// the offsets the partition had at an applied index; this replica keeps
// what it already has (applied entries are committed, so its log is a
// prefix of every other replica's) and fetches only the records it lacks
// from its peers, as a Kafka follower would, then moves its checkpoint to
// the snapshot's index. Interrupted, it starts over at the next open: the
// checkpoint moves only at the end, and records beyond it are dropped then.
func (s *StateMachine) RecoverFromSnapshot(r io.Reader, done <-chan struct{}) error {
	s.cleaning.Lock()
	defer s.cleaning.Unlock()
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return err
	}
	fields := 3
	switch string(magic) {
	case snapshotMagic:
	case snapshotMagicHorizon:
		fields = 4
	default:
		return errors.New("partition: not a partition snapshot")
	}
	p := make([]byte, 8*fields)
	if _, err := io.ReadFull(r, p); err != nil {
		return err
	}
	target := checkpoint{AppliedIndex: binary.BigEndian.Uint64(p),
		NextOffset: int64(binary.BigEndian.Uint64(p[8:])), LogStartOffset: int64(binary.BigEndian.Uint64(p[16:]))}
	if fields == 4 {
		target.ProducerHorizon = int64(binary.BigEndian.Uint64(p[24:]))
	}
	if target.LogStartOffset > target.NextOffset {
		return fmt.Errorf("partition: snapshot with log start %d beyond its end %d", target.LogStartOffset, target.NextOffset)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, next := s.log.Offsets(); next > target.NextOffset || next < target.LogStartOffset {
		// Nothing here is a prefix of what is needed: start empty.
		if err := s.reset(target.LogStartOffset); err != nil {
			return err
		}
	}
	fetched, err := s.catchUp(ctx, target.NextOffset)
	if err != nil {
		if ctx.Err() != nil {
			return sm.ErrSnapshotStopped
		}
		return err
	}
	start, _ := s.log.Offsets()
	s.log.dropBefore(max(start, target.LogStartOffset))
	start, next := s.log.Offsets()
	if err := s.commitCheckpoint(checkpoint{AppliedIndex: target.AppliedIndex, NextOffset: next, LogStartOffset: start,
		ProducerHorizon: min(target.ProducerHorizon, next)}); err != nil {
		return err
	}
	if err := s.load(s.ck); err != nil {
		return err
	}
	s.appliedIndex.Store(s.ck.AppliedIndex)
	SnapshotsRecovered.Add(1)
	SnapshotBytesFetched.Add(fetched)
	return nil
}

// reset empties the partition to an empty log at offset, checkpointed as
// applying nothing: should this stop half way, the next open starts from
// the snapshot again rather than from a log that no longer matches.
func (s *StateMachine) reset(offset int64) error {
	// Written and framed segments alike: a framed segment of the replaced
	// log below offset would otherwise be opened again as part of the new
	// one and serve its stale batches.
	names, _ := filepath.Glob(filepath.Join(s.dir, "*.log"))
	framed, _ := filepath.Glob(filepath.Join(s.dir, "*"+framedSuffix))
	names = append(names, framed...)
	ck := checkpoint{NextOffset: offset, LogStartOffset: offset}
	if err := s.commitCheckpoint(ck); err != nil {
		return err
	}
	for _, name := range names {
		if err := os.Remove(name); err != nil {
			return err
		}
	}
	if err := durable.SyncDir(s.dir); err != nil {
		return err
	}
	return s.load(s.ck)
}

// commitCheckpoint makes ck the durable checkpoint, as Sync does for the
// applied state (new segment files are already in the directory: see
// activeSegment).
func (s *StateMachine) commitCheckpoint(ck checkpoint) error {
	ck.Seq = s.ck.Seq
	s.ck = ck
	return s.Sync()
}

// catchUp appends the records up to end that this replica lacks, fetched
// from its peers; it returns the bytes fetched.
func (s *StateMachine) catchUp(ctx context.Context, end int64) (int64, error) {
	var fetched int64
	backoff := catchUpBackoff
	for {
		_, next := s.log.Offsets()
		if next >= end {
			return fetched, nil
		}
		var data []byte
		var logStart int64
		var err error
		if s.source == nil {
			err = errors.New("no source of records")
		} else {
			data, logStart, err = s.source.Fetch(ctx, next, catchUpFetchBytes)
		}
		if err == nil && len(data) == 0 && logStart > next {
			// The records before logStart are gone everywhere (retention
			// or DeleteRecords moved past them): continue from there, but
			// never past end, where the entries after the snapshot apply.
			if err = s.reset(min(logStart, end)); err == nil {
				continue
			}
		}
		if err == nil && len(data) > 0 {
			var n int
			n, err = s.appendFetched(data, end)
			fetched += int64(n)
			if err == nil {
				err = s.log.sync()
			}
			if err == nil && n > 0 {
				backoff = catchUpBackoff
				continue
			}
		}
		if ctx.Err() != nil {
			return fetched, ctx.Err()
		}
		if err != nil {
			s.logger.Warn("catching up from a snapshot: fetch failed", "dir", s.dir, "from", next, "to", end, "error", err)
		}
		select {
		case <-ctx.Done():
			return fetched, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// appendFetched appends the fetched batches that continue this log, up to
// end. Only an empty log may start inside the first batch (its log start
// then lies inside it, as after DeleteRecords).
func (s *StateMachine) appendFetched(data []byte, end int64) (int, error) {
	batches, err := SplitBatches(data, 0)
	if err != nil {
		return 0, fmt.Errorf("fetched records: %w", err)
	}
	l := s.log
	appended := 0
	for _, b := range batches {
		h, _ := readHeader(b)
		last := h.BaseOffset + int64(h.LastDelta)
		start, next := l.Offsets()
		switch {
		case h.BaseOffset >= end:
			return appended, nil
		case last < next:
			continue
		case last >= end:
			// The snapshot's end is where an applied batch ended on its
			// replica: a batch across it is not the same log.
			return appended, fmt.Errorf("fetched batch [%d, %d] crosses the snapshot's end %d", h.BaseOffset, last, end)
		case h.BaseOffset < next && next == start && l.beginAt(h.BaseOffset):
			// A log just reset to a start inside this batch now begins
			// with it.
		case h.BaseOffset != next:
			return appended, fmt.Errorf("fetched batch at %d does not continue the log at %d", h.BaseOffset, next)
		}
		if _, err := l.append(b, h.LeaderEpoch, nil); err != nil {
			return appended, err
		}
		appended += len(b)
	}
	return appended, nil
}

// Close implements sm.IOnDiskStateMachine.
func (s *StateMachine) Close() error {
	s.cleaning.Lock()
	defer s.cleaning.Unlock()
	defer s.closeOnce.Do(func() { close(s.closed) })
	// What Update applied since the last Sync would be applied again at
	// the next open; a clean close saves that.
	var err error
	if s.ckFile != nil && s.ck.AppliedIndex > 0 {
		err = s.Sync()
	}
	s.log.Close()
	if s.ckFile != nil {
		err = errors.Join(err, s.ckFile.Close())
	}
	return err
}

// Closed is closed once Close returned.
func (s *StateMachine) Closed() <-chan struct{} { return s.closed }
