package raftlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dbconfig "github.com/lni/dragonboat/v3/config"
	"github.com/lni/dragonboat/v3/raftio"
	pb "github.com/lni/dragonboat/v3/raftpb"

	"github.com/raftka/raftka/broker/frames"
	"github.com/raftka/raftka/broker/internal/durable"
)

// Name is the store's name in Dragonboat's data directory flag file: a
// NodeHost directory written by another log store is refused at start.
const Name = "raftka-wal"

// binaryFormat versions the file layout.
const binaryFormat = 1

// DefaultFileBytes is the size at which a new file is started.
const DefaultFileBytes = 64 << 20

// maxSpares is how many emptied files are kept to be written over. A file
// written in place syncs with its data alone; a growing one makes every
// fdatasync write the file's metadata too (its size and new blocks: a
// journal commit where the file system keeps a journal, the inode's block
// written and waited for before the flush where it keeps none, as on the
// benchmarks' machine), which cost this disk a third of its fdatasync
// write rate. One roll usually frees one file; the second spare covers a
// roll that frees none.
const maxSpares = 2

// Factory creates the store for Dragonboat (NodeHostConfig.Expert.LogDBFactory).
type Factory struct {
	// FileBytes is the size at which a new file is started; 0 is
	// DefaultFileBytes.
	FileBytes int64
	// Opened, if set, is given the store once it is open: Dragonboat
	// keeps it to itself otherwise, and the broker reports its Stats.
	Opened func(*Store)
	// Frames, if set, are the frame logs of the groups that keep their
	// entries in one (OpenFramed).
	Frames frames.Logs
	// Timed, if set, is given to the store's SetTimed.
	Timed func(stage SaveStage, d time.Duration)
	// CopyBytes is given to the store's SetCopyBytes: 0 is
	// DefaultCopyBytes, a negative value never copies.
	CopyBytes int
}

// Name implements config.LogDBFactory.
func (Factory) Name() string { return Name }

// Create implements config.LogDBFactory: the store lives in a directory
// of the NodeHost's own.
func (f Factory) Create(_ dbconfig.NodeHostConfig, _ dbconfig.LogDBCallback, dirs []string, _ []string) (raftio.ILogDB, error) {
	if len(dirs) == 0 {
		return nil, errors.New("raftlog: no directory")
	}
	s, err := OpenFramed(filepath.Join(dirs[0], "raftlog"), f.FileBytes, f.Frames)
	if err == nil && f.CopyBytes != 0 {
		s.SetCopyBytes(max(f.CopyBytes, 0))
	}
	if err == nil && f.Timed != nil {
		s.SetTimed(f.Timed)
	}
	if err == nil && f.Opened != nil {
		f.Opened(s)
	}
	return s, err
}

// walFile is one file of the log. Readers hold a reference while they read
// outside the store's lock, so a file deleted meanwhile is closed only
// after them.
type walFile struct {
	no   uint32
	f    *os.File
	size int64 // where its valid records end; a reused file is longer
	// reusable files have masked records (they start with a file header):
	// an emptied one is kept as a spare. Legacy files are deleted.
	reusable bool
	// allocated is how far the file holds bytes, records or the zeros
	// written ahead of them (zeroAhead); known once stat is set.
	allocated int64
	stat      bool

	mu      sync.Mutex
	refs    int
	retired bool
}

func (w *walFile) acquire() {
	w.mu.Lock()
	w.refs++
	w.mu.Unlock()
}

func (w *walFile) release() {
	w.mu.Lock()
	w.refs--
	closeNow := w.refs == 0 && w.retired
	w.mu.Unlock()
	if closeNow {
		_ = w.f.Close()
	}
}

// idle reports whether a retired file has no reader left, so that it can
// be written over.
func (w *walFile) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.retired && w.refs == 0
}

func (w *walFile) retire() {
	w.mu.Lock()
	w.retired = true
	closeNow := w.refs == 0
	w.mu.Unlock()
	if closeNow {
		_ = w.f.Close()
	}
}

// Store is the log store. It implements raftio.ILogDB.
type Store struct {
	dir       string
	fileBytes int64

	mu      sync.RWMutex
	nodes   index
	files   map[uint32]*walFile
	active  *walFile
	spares  []spare // emptied files, the next ones to write
	written uint64  // records appended
	failed  error   // a write or sync failed: nothing is trusted after it

	syncMu sync.Mutex    // one fdatasync at a time; the others wait and share it
	synced atomic.Uint64 // records known durable

	syncs, syncNanos, relocated, reused atomic.Uint64

	// frameLogs are the frame logs that keep some Raft groups' entries
	// in files of their own (broker/frames), or nil to keep them all
	// here; set when the store opens, never changed.
	frameLogs frames.Logs
	// dropped counts the records the replay found naming frames a crash
	// tore: their saves never returned, so they count as never written.
	dropped int
	// repaired counts the frames the replay wrote again from copies.
	repaired int

	// unsynced counts, per frame log, the saves whose frames were appended
	// and are not yet durable; a checkpoint waits for them (rollLocked).
	framesMu sync.Mutex
	unsynced map[frames.Writer]int
	// lazy are the frame logs holding frames of saves that copied them
	// into their records instead of fsyncing them (copyBytes); guarded by
	// mu. A checkpoint fsyncs them first, since it drops the copies.
	lazy map[frames.Writer]bool
	// copyBytes: a save whose entries come to at most this many bytes
	// copies them into its record and leaves its frames to a later fsync.
	copyBytes int
	// timed, if set, is told how long each stage of a save took.
	timed func(stage SaveStage, d time.Duration)
}

// SaveStage is a part of SaveRaftState that SetTimed reports.
type SaveStage int

const (
	// SaveFrames: from the save's start, the entries written to their
	// groups' frame logs and fsynced.
	SaveFrames SaveStage = iota
	// SaveRecord: from the save's start, the save's record appended to
	// the store and fsynced, side by side with the frames; the fsync is
	// shared with concurrent saves.
	SaveRecord
	// SaveFdatasync: one fdatasync of the shared log, which concurrent
	// saves share.
	SaveFdatasync
)

// SetTimed makes the store report how long each stage of a save of
// entries takes; it must be set before the store is used.
func (s *Store) SetTimed(timed func(stage SaveStage, d time.Duration)) { s.timed = timed }

// DefaultCopyBytes is the size of entries below which a save copies its
// frames into its record rather than fsyncing them: about what this
// machine's disk writes in the time of the fdatasync it saves.
const DefaultCopyBytes = 64 << 10

// SetCopyBytes sets the size at or below which a save's entries are copied
// into its record, one fsync in place of two side by side: the frames are
// still written, and the partition's state machine serves them, but they
// are fsynced only with a later save's, a checkpoint or Close, and the
// replay writes them again from the copy when a crash tore them
// (OpenFramed). Small saves, those of a producer waiting for each
// acknowledgement, then wait for one fsync; large ones still write each
// byte once. 0 never copies. It must be set before the store is used.
func (s *Store) SetCopyBytes(n int) { s.copyBytes = n }

// frameLog is the frame log of shard, or nil.
func (s *Store) frameLog(shard uint64) frames.Writer {
	if s.frameLogs == nil {
		return nil
	}
	return s.frameLogs.Writer(shard)
}

// spare is emptied file no, kept to be written over; w is its retired
// walFile (nil for one found at open), whose readers must be done first.
type spare struct {
	no uint32
	w  *walFile
}

// Stats is what the store reports for monitoring.
type Stats struct {
	Files          int
	Bytes          int64  // in its files
	SpareFiles     int    // emptied files kept to be written over
	ReusedFiles    uint64 // files started from a spare
	Syncs          uint64
	SyncSeconds    float64 // spent in fdatasync, summed
	RelocatedBytes uint64  // entries copied forward out of mostly dead files
}

// Stats returns the store's current figures.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	st := Stats{Files: len(s.files), SpareFiles: len(s.spares)}
	for _, w := range s.files {
		st.Bytes += w.size
	}
	s.mu.RUnlock()
	st.Syncs = s.syncs.Load()
	st.SyncSeconds = time.Duration(s.syncNanos.Load()).Seconds()
	st.RelocatedBytes = s.relocated.Load()
	st.ReusedFiles = s.reused.Load()
	return st
}

var _ raftio.ILogDB = (*Store)(nil)

// Open opens the store in dir, replaying what an earlier store wrote, and
// starts a new file.
func Open(dir string, fileBytes int64) (*Store, error) { return OpenFramed(dir, fileBytes, nil) }

// OpenFramed is Open for a store whose groups keep their entries in frame
// logs: a group's entries go into the log logs.Writer gives it, and only
// their locations into the store's own records. A partition's entries are
// then written once, into files its state machine reads too. A record
// and the frames it names are fsynced side by side, so the replay checks
// a record's frames before it believes it. A record that names a frame a
// crash tore is dropped whole, as never written: its save never returned,
// so nothing was acknowledged or sent on its strength, and no later
// record of its groups exists (a group's saves follow one another). The
// new file Open starts holds a checkpoint without it, so it is never read
// again once the frame logs write over its frames.
func OpenFramed(dir string, fileBytes int64, logs frames.Logs) (*Store, error) {
	if fileBytes <= 0 {
		fileBytes = DefaultFileBytes
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Store{dir: dir, fileBytes: fileBytes, nodes: index{}, files: map[uint32]*walFile{}, frameLogs: logs, unsynced: map[frames.Writer]int{}, lazy: map[frames.Writer]bool{}, copyBytes: DefaultCopyBytes}
	if err := s.findSpares(); err != nil {
		return nil, err
	}
	if err := s.replay(); err != nil {
		s.closeFiles()
		return nil, err
	}
	s.mu.Lock()
	err := s.rollLocked()
	s.mu.Unlock()
	if err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

func (s *Store) path(no uint32) string { return filepath.Join(s.dir, fmt.Sprintf("%08d.wal", no)) }

func (s *Store) sparePath(no uint32) string {
	return filepath.Join(s.dir, fmt.Sprintf("%08d.spare", no))
}

// findSpares takes up the spares an earlier process left, up to maxSpares.
// createLocked checks their numbers.
func (s *Store) findSpares() error {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.spare"))
	if err != nil {
		return err
	}
	for _, name := range names {
		no, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(name), ".spare"), 10, 32)
		if err != nil || len(s.spares) == maxSpares {
			_ = os.Remove(name)
			continue
		}
		s.spares = append(s.spares, spare{no: uint32(no)})
	}
	return nil
}

// createLocked makes file no from an idle spare if there is one, else
// from nothing. A reused file keeps its old bytes past what is written:
// they are masked for another file number, so a replay stops at them.
func (s *Store) createLocked(no uint32) (*os.File, error) {
	for i, sp := range s.spares {
		if sp.w != nil && !sp.w.idle() {
			continue
		}
		s.spares = append(s.spares[:i:i], s.spares[i+1:]...)
		// A spare numbered no or above would share its mask with a file
		// yet to come: the .wal files after it were lost under the store.
		if sp.no >= no {
			_ = os.Remove(s.sparePath(sp.no))
			break
		}
		if err := os.Rename(s.sparePath(sp.no), s.path(no)); err != nil {
			_ = os.Remove(s.sparePath(sp.no))
			break
		}
		f, err := os.OpenFile(s.path(no), os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		s.reused.Add(1)
		return f, nil
	}
	return os.OpenFile(s.path(no), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
}

func fileNumbers(dir string) ([]uint32, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var nos []uint32
	for _, e := range names {
		base, ok := strings.CutSuffix(e.Name(), ".wal")
		if !ok {
			continue
		}
		no, err := strconv.ParseUint(base, 10, 32)
		if err != nil {
			continue
		}
		nos = append(nos, uint32(no))
	}
	sort.Slice(nos, func(i, j int) bool { return nos[i] < nos[j] })
	return nos, nil
}

// replay rebuilds the index from the newest file that holds a checkpoint:
// a newer file without one is a new file whose checkpoint never became
// durable, and it is removed.
func (s *Store) replay() error {
	nos, err := fileNumbers(s.dir)
	if err != nil {
		return err
	}
	for i := len(nos) - 1; i >= 0; i-- {
		x := index{}
		end, found, err := s.scan(nos[i], x)
		if err != nil {
			return err
		}
		if !found {
			if err := os.Remove(s.path(nos[i])); err != nil {
				return err
			}
			continue
		}
		s.nodes = x
		for _, no := range nos[:i+1] {
			f, err := os.OpenFile(s.path(no), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			st, err := f.Stat()
			if err != nil {
				_ = f.Close()
				return err
			}
			s.files[no] = &walFile{no: no, f: f, size: st.Size(), reusable: startsWithHeader(f, no)}
		}
		s.files[nos[i]].size = end
		// What was read must be durable before it is acted on: a record
		// written by a process that died before its fdatasync is in the
		// page cache only.
		if err := s.files[nos[i]].f.Sync(); err != nil {
			return err
		}
		s.active = s.files[nos[i]]
		return s.checkLocations()
	}
	return nil
}

// scan applies the records of one file to x from its last checkpoint on,
// and returns where the valid records end and whether it holds a
// checkpoint. Records after the first torn one are not read: nothing was
// acknowledged after it. A record that names a frame a crash tore is
// dropped (OpenFramed).
func (s *Store) scan(no uint32, x index) (end int64, checkpoint bool, err error) {
	torn, err := s.tornRecords(no)
	if err != nil {
		return 0, false, err
	}
	var repairer frames.Repairer
	defer repairer.Close()
	end, err = s.eachRecord(no, func(off int64, payload []byte) error {
		if payload[0] == kindCheckpoint {
			checkpoint = true
		}
		if !checkpoint {
			return nil
		}
		if torn[off] {
			s.dropped++
			return nil
		}
		if err := s.repairCopiedFrames(&repairer, payload); err != nil {
			return fmt.Errorf("raftlog: %s at %d: %w", s.path(no), off, err)
		}
		if err := x.apply(payload, no, off+recordHeader); err != nil {
			return fmt.Errorf("raftlog: %s at %d: %w", s.path(no), off, err)
		}
		return nil
	})
	return end, checkpoint, err
}

// eachRecord calls fn with the offset and payload of each valid record of
// file no, up to the first torn one, where it returns: the valid records'
// end. payload is only good until fn returns.
func (s *Store) eachRecord(no uint32, fn func(off int64, payload []byte) error) (int64, error) {
	f, err := os.Open(s.path(no))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var header [recordHeader]byte
	var payload []byte
	var off int64
	mask := fileMask(no)
	for {
		if _, err := io.ReadFull(r, header[:]); err != nil {
			return off, nil
		}
		size := int64(binary.BigEndian.Uint32(header[0:4]))
		if size == 0 || size > st.Size()-off-recordHeader {
			return off, nil
		}
		if int64(cap(payload)) < size {
			payload = make([]byte, size)
		}
		payload = payload[:size]
		if _, err := io.ReadFull(r, payload); err != nil {
			return off, nil
		}
		crc, stored := crc32.Checksum(payload, castagnoli), binary.BigEndian.Uint32(header[4:8])
		if off == 0 && crc == stored {
			mask = 0 // a legacy file
		}
		if crc^mask != stored {
			return off, nil
		}
		if err := fn(off, payload); err != nil {
			return 0, err
		}
		off += recordHeader + size
	}
}

// tornRecords finds the updates records of file no that name a frame a
// crash tore, by offset. Only a node's last framed record can: each save
// of a Raft group waits for the one before it, so a record that another
// of the same node follows had its frames durable; checking the last ones
// alone keeps the open from reading every frame written since the
// checkpoint.
func (s *Store) tornRecords(no uint32) (map[int64]bool, error) {
	if s.frameLogs == nil {
		return nil, nil
	}
	last := map[nodeKey]int64{}
	sizes := map[int64]int{}
	_, err := s.eachRecord(no, func(off int64, payload []byte) error {
		if payload[0] != kindUpdatesFramed && payload[0] != kindUpdatesCopied {
			return nil
		}
		d := &decoder{buf: payload, pos: 1}
		eachUpdate(d, payload[0], 0, 0, func(u update) {
			if len(u.locs) > 0 && u.locs[0].framed() {
				last[u.node], sizes[off] = off, len(payload)
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(no))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	torn := map[int64]bool{}
	for _, off := range last {
		if _, checked := torn[off]; checked {
			continue
		}
		payload := make([]byte, sizes[off])
		if _, err := f.ReadAt(payload, off+recordHeader); err != nil {
			return nil, err
		}
		durable, err := s.framesDurable(payload)
		if err != nil {
			return nil, err
		}
		torn[off] = !durable
	}
	return torn, nil
}

// framesDurable reports whether every frame an updates record names is on
// disk whole (frames.Durable), those it holds copies of aside: the replay
// repairs those (repairCopiedFrames).
func (s *Store) framesDurable(payload []byte) (bool, error) {
	d := &decoder{buf: payload, pos: 1}
	durable := true
	var err error
	eachUpdate(d, payload[0], 0, 0, func(u update) {
		if u.copies != nil {
			return
		}
		for _, l := range u.locs {
			if !durable || err != nil || !l.framed() {
				continue
			}
			durable, err = frames.Durable(s.frameLogs.Dir(u.node.shard, u.node.node), l.frame())
		}
	})
	return durable, err
}

// repairCopiedFrames writes again, from the copies an updates record
// holds, the frames of it that a crash tore: the record is durable, so its
// save returned and the entries may have been acknowledged. A group's
// saves follow one another and their frames are appended in that order,
// so the frames of a durable record precede any torn frame of a save whose
// record never became durable, and the frame log's end, found at its
// first torn frame when it opens, comes after them.
func (s *Store) repairCopiedFrames(r *frames.Repairer, payload []byte) error {
	if payload[0] != kindUpdatesCopied || s.frameLogs == nil {
		return nil
	}
	d := &decoder{buf: payload, pos: 1}
	var err error
	eachUpdate(d, payload[0], 0, 0, func(u update) {
		for i := 0; i < len(u.copies) && err == nil; i++ {
			var wrote bool
			wrote, err = r.Repair(s.frameLogs.Dir(u.node.shard, u.node.node), u.locs[i].frame(), u.copies[i])
			if wrote {
				s.repaired++
			}
		}
	})
	return errors.Join(d.err, err)
}

// Repaired is how many frames the replay wrote again from their copies in
// the records that name them (SetCopyBytes).
func (s *Store) Repaired() int { return s.repaired }

// Dropped is how many records the replay dropped as never written: they
// named frames a crash tore before their saves returned.
func (s *Store) Dropped() int { return s.dropped }

// startsWithHeader reports whether file no starts with a valid file
// header record, masked for it.
func startsWithHeader(f *os.File, no uint32) bool {
	want := fileHeaderRecord()
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 0); err != nil {
		return false
	}
	binary.BigEndian.PutUint32(want[4:8], binary.BigEndian.Uint32(want[4:8])^fileMask(no))
	return string(got) == string(want)
}

// checkLocations refuses an index that points outside the files: a file
// lost or cut short under the store.
func (s *Store) checkLocations() error {
	for k, n := range s.nodes {
		for _, l := range n.locs {
			if l.framed() {
				continue // checked when read: the frame logs are not known yet
			}
			w := s.files[l.file]
			if w == nil || l.off+int64(l.size) > w.size {
				return fmt.Errorf("raftlog: entry of shard %d node %d is missing from file %d", k.shard, k.node, l.file)
			}
		}
	}
	return nil
}

// rollLocked starts a new file: entries still live in mostly dead files
// are copied into it, then a checkpoint of the index is written and made
// durable, and files that nothing points into are deleted.
func (s *Store) rollLocked() error {
	// The checkpoint names every entry in the index, those of saves whose
	// frames are still being fsynced too: they must be durable first.
	if err := s.syncUnsyncedFrames(); err != nil {
		return s.failLocked(err)
	}
	// It drops the copies of the frames saves left unsynced.
	if err := s.syncLazyFramesLocked(); err != nil {
		return s.failLocked(err)
	}
	var next uint32 = 1
	if s.active != nil {
		if err := durable.Fdatasync(s.active.f); err != nil {
			return s.failLocked(err)
		}
		s.raiseSynced(s.written)
		next = s.active.no + 1
	}
	f, err := s.createLocked(next)
	if err != nil {
		return s.failLocked(err)
	}
	w := &walFile{no: next, f: f, reusable: true}
	if err := w.append(fileHeaderRecord()); err != nil {
		_ = f.Close()
		return s.failLocked(err)
	}
	if err := s.relocate(w); err != nil {
		_ = f.Close()
		return s.failLocked(err)
	}
	rec := newRecord(kindCheckpoint, 64*len(s.nodes))
	rec = binary.AppendUvarint(rec, uint64(len(s.nodes)))
	for k, n := range s.nodes {
		rec = appendNodeImage(rec, k, n)
	}
	if err := w.append(seal(rec)); err != nil {
		_ = f.Close()
		return s.failLocked(err)
	}
	if err := durable.Fdatasync(f); err != nil {
		_ = f.Close()
		return s.failLocked(err)
	}
	if err := durable.SyncDir(s.dir); err != nil {
		_ = f.Close()
		return s.failLocked(err)
	}
	s.files[next] = w
	s.active = w
	s.deleteUnreferenced()
	return nil
}

// quietGroups tells the groups with no entry in the active file (the one
// just filled, when a roll is under way) and some live entry.
func (s *Store) quietGroups() func(*nodeLog) bool {
	justFilled := s.activeNo()
	return func(n *nodeLog) bool { return len(n.locs) > 0 && n.locs[len(n.locs)-1].file != justFilled }
}

// activeNo is the active file's number, 0 before the first file.
func (s *Store) activeNo() uint32 {
	if s.active == nil {
		return 0
	}
	return s.active.no
}

// relocationPlan chooses the files whose quiet entries a roll copies
// forward (see relocate) and the bytes it copies; live is every file's
// live bytes.
func (s *Store) relocationPlan() (chosen map[uint32]bool, budget int64, live map[uint32]int64) {
	justFilled := s.activeNo()
	quiet := s.quietGroups()
	live = map[uint32]int64{}
	movable := map[uint32]int64{}
	for _, n := range s.nodes {
		q := quiet(n)
		for _, l := range n.locs {
			live[l.file] += int64(l.size)
			if q {
				movable[l.file] += int64(l.size)
			}
		}
	}
	var candidates []uint32
	for no, old := range s.files {
		if no != justFilled && movable[no] > 0 && live[no]*2 < old.size {
			candidates = append(candidates, no)
		}
	}
	sort.Slice(candidates, func(i, j int) bool { return movable[candidates[i]] < movable[candidates[j]] })
	chosen = map[uint32]bool{}
	for _, no := range candidates {
		if budget+movable[no] > s.fileBytes/2 && len(chosen) > 0 {
			break
		}
		chosen[no] = true
		budget += movable[no]
	}
	return chosen, budget, live
}

// relocate copies into w the live entries of quiet Raft groups out of
// files less than half live, so that those files can go. A group with an
// entry in the file just filled is busy: its older entries are about to be
// compacted away, and copying them would write them twice (with many busy
// groups each keeping megabytes of log, that was 8% of all the store
// wrote). The file just filled is left alone for the same reason. The
// emptiest files go first, and one roll copies at most half a file, which
// bounds the pause it makes.
func (s *Store) relocate(w *walFile) error {
	chosen, budget, _ := s.relocationPlan()
	if len(chosen) == 0 {
		return nil
	}
	quiet := s.quietGroups()
	rec := newRecord(kindRelocated, int(budget))
	for _, n := range s.nodes {
		if !quiet(n) {
			continue
		}
		for i, l := range n.locs {
			if !chosen[l.file] {
				continue
			}
			at := len(rec)
			rec = append(rec, make([]byte, l.size)...)
			if _, err := s.files[l.file].f.ReadAt(rec[at:], l.off); err != nil {
				return err
			}
			n.locs[i] = loc{file: w.no, off: w.size + int64(at), size: l.size}
		}
	}
	s.relocated.Add(uint64(len(rec) - recordHeader - 1))
	return w.append(seal(rec))
}

// GroupsPinningOldest returns, for a store held to budget bytes, the Raft
// groups (shards) with live entries in its oldest files, those that
// must go for the rest to fit; none when the files fit. Once those groups
// have compacted their logs past them, Reclaim deletes the files.
func (s *Store) GroupsPinningOldest(budget int64) []uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var total int64
	var nos []uint32
	for no, w := range s.files {
		total += w.size
		if no != s.active.no {
			nos = append(nos, no)
		}
	}
	sort.Slice(nos, func(i, j int) bool { return nos[i] < nos[j] })
	doomed := map[uint32]bool{}
	for _, no := range nos {
		if total <= budget {
			break
		}
		doomed[no] = true
		total -= s.files[no].size
	}
	var groups []uint64
	for k, n := range s.nodes {
		for _, l := range n.locs {
			if doomed[l.file] {
				groups = append(groups, k.shard)
				break
			}
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i] < groups[j] })
	return slices.Compact(groups)
}

// Reclaim starts a new file now, rather than when the active one is full,
// if that lets a file go: one that no live entry points into any more, or
// whose few live entries a roll copies forward. Files go only at a roll,
// once a checkpoint that no longer points into them is durable; a store
// held to a budget (the broker's --raft-log-max-bytes) reclaims so after
// its groups compacted, also when little is being written.
func (s *Store) Reclaim() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return false, s.failed
	}
	chosen, _, live := s.relocationPlan()
	for no := range s.files {
		if no != s.active.no && (live[no] == 0 || chosen[no]) {
			return true, s.rollLocked()
		}
	}
	return false, nil
}

func (s *Store) deleteUnreferenced() {
	used := map[uint32]bool{s.active.no: true}
	for _, n := range s.nodes {
		for _, l := range n.locs {
			used[l.file] = true
		}
	}
	for no, w := range s.files {
		if used[no] {
			continue
		}
		delete(s.files, no)
		w.retire()
		if w.reusable && len(s.spares) < maxSpares {
			if err := os.Rename(s.path(no), s.sparePath(no)); err == nil {
				s.spares = append(s.spares, spare{no: no, w: w})
				continue
			}
		}
		// A file that stays is harmless: the next open does not read it,
		// and the next roll tries again.
		_ = os.Remove(s.path(no))
	}
}

// append writes the sealed rec after the file's records, masking its CRC
// for this file (in rec itself).
func (w *walFile) append(rec []byte) error {
	crc := binary.BigEndian.Uint32(rec[4:8])
	binary.BigEndian.PutUint32(rec[4:8], crc^fileMask(w.no))
	if _, err := w.f.WriteAt(rec, w.size); err != nil {
		return err
	}
	w.size += int64(len(rec))
	return w.zeroAhead()
}

// zeroAheadBytes is how far past its records a growing file is written
// with zeros.
const zeroAheadBytes = 1 << 20

var zeros = make([]byte, zeroAheadBytes)

// zeroAhead writes zeros past the records of a file that would otherwise
// grow with each one: an fdatasync of a file whose size changed writes
// its metadata too (see maxSpares), one of blocks already written flushes
// the data alone, which this disk does in about half the time. The
// metadata is then written once per zeroAheadBytes rather than once per
// record; a spare written over needs none of it. A replay stops at the
// zeros, as at any record of size 0.
func (w *walFile) zeroAhead() error {
	if !w.stat {
		st, err := w.f.Stat()
		if err != nil {
			return err
		}
		w.allocated, w.stat = st.Size(), true
	}
	if w.allocated-w.size >= zeroAheadBytes/2 {
		return nil
	}
	from, to := max(w.allocated, w.size), w.size+zeroAheadBytes
	if _, err := w.f.WriteAt(zeros[:to-from], from); err != nil {
		return err
	}
	w.allocated = to
	return nil
}

func (s *Store) failLocked(err error) error {
	if s.failed == nil {
		s.failed = fmt.Errorf("raftlog: %w", err)
	}
	return s.failed
}

func (s *Store) raiseSynced(seq uint64) {
	for {
		cur := s.synced.Load()
		if cur >= seq || s.synced.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// appendRecord writes a sealed record, applies it to the index and returns
// once it is durable. Concurrent callers share one fdatasync.
func (s *Store) appendRecord(rec []byte) error {
	seq, err := s.writeRecord(rec, nil, nil)
	if err != nil {
		return err
	}
	return s.syncThrough(seq)
}

// writeRecord appends rec to the active file, not yet durable, and
// returns its sequence number for syncThrough. With before set, it first
// calls it under the lock that orders records, with the index as it
// stands before rec. lazy are frame logs holding rec's frames unsynced
// (entriesCopied), for the next checkpoint to fsync.
func (s *Store) writeRecord(rec []byte, before func(), lazy []frames.Writer) (uint64, error) {
	s.mu.Lock()
	if s.failed != nil {
		s.mu.Unlock()
		return 0, s.failed
	}
	if before != nil {
		before()
	}
	if s.active.size >= s.fileBytes {
		if err := s.rollLocked(); err != nil {
			s.mu.Unlock()
			return 0, err
		}
	}
	// After any roll: the checkpoint this record follows need not wait
	// for its frames, the next one must.
	for _, fl := range lazy {
		s.lazy[fl] = true
	}
	w := s.active
	off := w.size
	if err := w.append(rec); err != nil {
		err = s.failLocked(err)
		s.mu.Unlock()
		return 0, err
	}
	if err := s.nodes.apply(rec[recordHeader:], w.no, off+recordHeader); err != nil {
		panic(err) // the record was encoded here: a bug, not a disk fault
	}
	s.written++
	seq := s.written
	s.mu.Unlock()
	return seq, nil
}

func (s *Store) syncThrough(seq uint64) error {
	if s.synced.Load() >= seq {
		return nil
	}
	// Dragonboat's step worker queued the leader's Replicate messages just
	// before this save, and readied the transport's senders on this
	// thread's run queue. A goroutine inside a system call keeps its
	// thread's queue until Go's monitor hands it to another thread, which
	// on busy cores came 0.30 ms later at the mean: the followers' saves,
	// on the acknowledgement's path, started that much later. Yielding
	// first lets the senders write before the fdatasync (0.17 ms).
	runtime.Gosched()
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.RLock()
	if s.synced.Load() >= seq {
		s.mu.RUnlock()
		return nil
	}
	if s.failed != nil {
		s.mu.RUnlock()
		return s.failed
	}
	// Every record up to target is in the active file or in one a roll
	// already synced.
	target, w := s.written, s.active
	w.acquire()
	s.mu.RUnlock()
	began := time.Now()
	err := durable.Fdatasync(w.f)
	took := time.Since(began)
	s.syncs.Add(1)
	s.syncNanos.Add(uint64(took))
	if s.timed != nil {
		s.timed(SaveFdatasync, took)
	}
	w.release()
	if err != nil {
		s.mu.Lock()
		err = s.failLocked(err)
		s.mu.Unlock()
		return err
	}
	s.raiseSynced(target)
	return nil
}

func (s *Store) closeFiles() {
	for no, w := range s.files {
		delete(s.files, no)
		w.retire()
	}
}

// Name implements raftio.ILogDB.
func (s *Store) Name() string { return Name }

// BinaryFormat implements raftio.ILogDB.
func (s *Store) BinaryFormat() uint32 { return binaryFormat }

// Close implements raftio.ILogDB.
func (s *Store) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.active != nil && s.failed == nil {
		err = errors.Join(s.syncLazyFramesLocked(), durable.Fdatasync(s.active.f))
	}
	s.closeFiles()
	if s.failed == nil {
		s.failed = errors.New("raftlog: closed")
	}
	return err
}

// ListNodeInfo implements raftio.ILogDB: the nodes with a bootstrap record.
func (s *Store) ListNodeInfo() ([]raftio.NodeInfo, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	infos := []raftio.NodeInfo{}
	for k, n := range s.nodes {
		if n.bootstrap != nil {
			infos = append(infos, raftio.GetNodeInfo(k.shard, k.node))
		}
	}
	sort.Slice(infos, func(i, j int) bool {
		if infos[i].ClusterID != infos[j].ClusterID {
			return infos[i].ClusterID < infos[j].ClusterID
		}
		return infos[i].NodeID < infos[j].NodeID
	})
	return infos, nil
}

// SaveBootstrapInfo implements raftio.ILogDB.
func (s *Store) SaveBootstrapInfo(shard, nodeID uint64, bs pb.Bootstrap) error {
	b, err := bs.Marshal()
	if err != nil {
		return err
	}
	rec := newRecord(kindBootstrap, len(b)+24)
	rec = appendNode(rec, nodeKey{shard, nodeID})
	rec = appendBytes(rec, b)
	return s.appendRecord(seal(rec))
}

// GetBootstrapInfo implements raftio.ILogDB.
func (s *Store) GetBootstrapInfo(shard, nodeID uint64) (pb.Bootstrap, error) {
	s.mu.RLock()
	n := s.nodes[nodeKey{shard, nodeID}]
	var b []byte
	if n != nil {
		b = n.bootstrap
	}
	s.mu.RUnlock()
	if b == nil {
		return pb.Bootstrap{}, raftio.ErrNoBootstrapInfo
	}
	var bs pb.Bootstrap
	if err := bs.Unmarshal(b); err != nil {
		return pb.Bootstrap{}, err
	}
	return bs, nil
}

// SaveRaftState implements raftio.ILogDB: all updates in one record, so
// they are saved together or not at all.
func (s *Store) SaveRaftState(updates []pb.Update, _ uint64) error {
	began := time.Now()
	framed, logs, settle, err := s.appendFrames(updates)
	// Once the record is in the index (or failed), its frames are
	// accounted for there and the frame logs' marks may speak for them.
	defer settle()
	if err != nil {
		return err
	}
	copied := len(logs) > 0 && entryBytes(updates) <= s.copyBytes
	rec, err := updatesRecord(updates, framed, copied)
	if err != nil {
		s.framesSynced(logs)
		return err
	}
	// The frames and the record that names them become durable side by
	// side, in one fsync's time rather than two in a row: a crash may then
	// leave the record durable and a frame torn, which the replay treats
	// as a save never made (OpenFramed). A small save copies its frames
	// into the record instead and leaves them to a later fsync: the replay
	// writes them again from the copy.
	var framesErr error
	var wg sync.WaitGroup
	var lazy []frames.Writer
	switch {
	case copied:
		lazy = logs
	case len(logs) > 0:
		wg.Go(func() {
			framesErr = s.syncFrames(logs)
			if s.timed != nil {
				s.timed(SaveFrames, time.Since(began))
			}
		})
	}
	var mustSync bool
	seq, err := s.writeRecord(rec, func() { mustSync = s.mustSyncLocked(updates) }, lazy)
	if copied {
		s.framesSynced(logs) // in lazy now, or failed
	}
	if err == nil && mustSync {
		err = s.syncThrough(seq)
	}
	if s.timed != nil && slices.ContainsFunc(updates, func(ud pb.Update) bool { return len(ud.EntriesToSave) > 0 }) {
		s.timed(SaveRecord, time.Since(began))
	}
	wg.Wait()
	if err != nil {
		return err
	}
	return framesErr
}

// entryBytes is the size of the entries updates save.
func entryBytes(updates []pb.Update) int {
	n := 0
	for i := range updates {
		for j := range updates[i].EntriesToSave {
			n += updates[i].EntriesToSave[j].Size()
		}
	}
	return n
}

// mustSyncLocked tells whether a save of updates must be durable before
// it returns: it must when it saves entries or a snapshot, or changes a
// node's term or vote. A save that only moves commit indexes need not
// be (etcd's raft.MustSync draws the same line): the commit index is
// learned again from the leader, and entries at or below an on-disk
// state machine's applied index are skipped when they are committed
// again. Such a record becomes durable with the next fsync of the file,
// which any later save or roll makes, or is lost whole in a crash; in a
// quiet partition it saves the fsync that followed every commit on each
// replica, one in a row on the leader's path to the acknowledgement.
func (s *Store) mustSyncLocked(updates []pb.Update) bool {
	for i := range updates {
		ud := &updates[i]
		if len(ud.EntriesToSave) > 0 || !pb.IsEmptySnapshot(ud.Snapshot) {
			return true
		}
		if pb.IsEmptyState(ud.State) {
			continue
		}
		st, n := ud.State, s.nodes[nodeKey{ud.ClusterID, ud.NodeID}]
		if n == nil || !n.hasState || n.state.Term != st.Term || n.state.Vote != st.Vote {
			return true
		}
	}
	return false
}

// appendFrames appends the entries of the groups that have a frame log to
// it, not yet durable (syncFrames): framed[i] holds update i's locations,
// or nil; logs are the frame logs appended to, counted as unsynced until
// syncFrames.
func (s *Store) appendFrames(updates []pb.Update) (framed [][]frames.Loc, logs []frames.Writer, settle func(), err error) {
	type appended struct {
		log  frames.Writer
		file uint32
	}
	var unsettled []appended
	settle = func() {
		for _, a := range unsettled {
			a.log.Settle(a.file)
		}
	}
	for i := range updates {
		ud := &updates[i]
		if len(ud.EntriesToSave) == 0 {
			continue
		}
		fl := s.frameLog(ud.ClusterID)
		if fl == nil {
			continue
		}
		payloads := make([]frames.Payload, len(ud.EntriesToSave))
		for j := range ud.EntriesToSave {
			payloads[j] = entryPayload{&ud.EntriesToSave[j]}
		}
		if !slices.Contains(logs, fl) {
			logs = append(logs, fl)
			s.framesMu.Lock()
			s.unsynced[fl]++
			s.framesMu.Unlock()
		}
		locs, err := fl.Append(payloads)
		if err != nil {
			s.framesSynced(logs)
			return nil, nil, settle, s.fail(fmt.Errorf("raftlog: frames of shard %d: %w", ud.ClusterID, err))
		}
		unsettled = append(unsettled, appended{fl, locs[0].File})
		if framed == nil {
			framed = make([][]frames.Loc, len(updates))
		}
		framed[i] = locs
	}
	return framed, logs, settle, nil
}

// syncFrames makes the frames appended to logs durable: one fdatasync per
// partition file, side by side, so that their writes and the disk's
// flushes overlap (and a journaling file system commits once for several).
func (s *Store) syncFrames(logs []frames.Writer) error {
	defer s.framesSynced(logs)
	errs := make([]error, len(logs))
	var wg sync.WaitGroup
	for i, fl := range logs {
		wg.Go(func() { errs[i] = fl.Sync() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return s.fail(fmt.Errorf("raftlog: frames sync: %w", err))
	}
	return nil
}

// framesSynced takes a save's frame logs off the unsynced count.
func (s *Store) framesSynced(logs []frames.Writer) {
	s.framesMu.Lock()
	defer s.framesMu.Unlock()
	for _, fl := range logs {
		if s.unsynced[fl]--; s.unsynced[fl] <= 0 {
			delete(s.unsynced, fl)
		}
	}
}

// syncUnsyncedFrames makes durable the frames of every save still
// fsyncing them (a frame log's Sync covers what was appended before it).
func (s *Store) syncUnsyncedFrames() error {
	s.framesMu.Lock()
	logs := make([]frames.Writer, 0, len(s.unsynced))
	for fl := range s.unsynced {
		logs = append(logs, fl)
	}
	s.framesMu.Unlock()
	for _, fl := range logs {
		if err := fl.Sync(); err != nil {
			return fmt.Errorf("frames sync before a checkpoint: %w", err)
		}
	}
	return nil
}

// syncLazyFramesLocked makes durable the frames that saves copied into
// their records instead of fsyncing them; under mu, which a save holds
// while it adds its frame logs.
func (s *Store) syncLazyFramesLocked() error {
	for fl := range s.lazy {
		if err := fl.Sync(); err != nil {
			return fmt.Errorf("frames sync before a checkpoint: %w", err)
		}
		delete(s.lazy, fl)
	}
	return nil
}

// fail records a write failure: nothing is trusted after it.
func (s *Store) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failLocked(err)
}

// updatesRecord is the sealed record of a SaveRaftState call; framed[i],
// when framed is not nil, holds the frame locations of update i's entries,
// which the record names instead of holding them.
func updatesRecord(updates []pb.Update, framed [][]frames.Loc, copied bool) ([]byte, error) {
	size := 0
	for i := range updates {
		if framed != nil && framed[i] != nil {
			size += 16 * len(framed[i])
			if !copied {
				continue
			}
		}
		for j := range updates[i].EntriesToSave {
			size += updates[i].EntriesToSave[j].Size() + 8
		}
	}
	kind := kindUpdates
	switch {
	case framed != nil && copied:
		kind = kindUpdatesCopied
	case framed != nil:
		kind = kindUpdatesFramed
	}
	rec := newRecord(kind, size+64*len(updates))
	rec = binary.AppendUvarint(rec, uint64(len(updates)))
	for i := range updates {
		ud := &updates[i]
		rec = appendNode(rec, nodeKey{ud.ClusterID, ud.NodeID})
		rec = appendBytes(rec, marshalState(ud.State))
		rec = appendBytes(rec, marshalSnapshot(ud.Snapshot))
		rec = binary.AppendUvarint(rec, uint64(len(ud.EntriesToSave)))
		if len(ud.EntriesToSave) == 0 {
			continue
		}
		first := ud.EntriesToSave[0].Index
		rec = binary.AppendUvarint(rec, first)
		for j := range ud.EntriesToSave {
			if e := &ud.EntriesToSave[j]; e.Index != first+uint64(j) {
				return nil, fmt.Errorf("raftlog: entries to save are not contiguous: %d after %d", e.Index, first+uint64(j)-1)
			}
		}
		if framed != nil {
			if framed[i] != nil {
				mode := entriesFramed
				if copied {
					mode = entriesCopied
				}
				rec = append(rec, mode)
				for _, l := range framed[i] {
					rec = binary.AppendUvarint(rec, uint64(l.File))
					rec = binary.AppendUvarint(rec, uint64(l.Off))
					rec = binary.AppendUvarint(rec, uint64(l.Size))
				}
				if !copied {
					continue
				}
			} else {
				rec = append(rec, entriesInline)
			}
		}
		for j := range ud.EntriesToSave {
			e := &ud.EntriesToSave[j]
			n := e.Size()
			rec = binary.AppendUvarint(rec, uint64(n))
			at := len(rec)
			rec = append(rec, make([]byte, n)...)
			if _, err := e.MarshalTo(rec[at:]); err != nil {
				return nil, err
			}
		}
	}
	return seal(rec), nil
}

// IterateEntries implements raftio.ILogDB: the entries from low on, below
// high and up to the last saved index, stopping after the first entry that
// takes the size past maxSize.
func (s *Store) IterateEntries(ents []pb.Entry, size uint64, shard, nodeID, low, high, maxSize uint64) ([]pb.Entry, uint64, error) {
	s.mu.RLock()
	n := s.nodes[nodeKey{shard, nodeID}]
	if n == nil || !n.hasMax {
		s.mu.RUnlock()
		return ents, size, nil
	}
	high = min(high, n.maxIndex+1)
	var locs []loc
	var files []*walFile // nil for a framed entry
	planned := size
	for i := low; i < high && n.has(i) && (len(locs) == 0 || planned <= maxSize); i++ {
		l := n.locs[i-n.first]
		locs = append(locs, l)
		planned += uint64(l.size)
		var w *walFile
		if !l.framed() {
			w = s.files[l.file]
			w.acquire()
		}
		files = append(files, w)
	}
	s.mu.RUnlock()
	defer func() {
		for _, w := range files {
			if w != nil {
				w.release()
			}
		}
	}()
	for i, l := range locs {
		var buf []byte
		var err error
		if l.framed() {
			buf, err = s.readFrame(shard, l)
		} else {
			buf = make([]byte, l.size)
			_, err = files[i].f.ReadAt(buf, l.off)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("raftlog: read entry of shard %d: %w", shard, err)
		}
		var e pb.Entry
		if err := e.Unmarshal(buf); err != nil {
			return nil, 0, fmt.Errorf("raftlog: entry of shard %d node %d: %w", shard, nodeID, err)
		}
		ents = append(ents, e)
		size += uint64(e.SizeUpperLimit())
		if size > maxSize {
			break
		}
	}
	return ents, size, nil
}

// EntryCommand is where the command (cmdLen bytes) of entry index of a
// Raft node lies in its group's frame log, if the entry lies there: a
// partition's state machine keeps the batches it applies where they are.
func (s *Store) EntryCommand(shard, node, index uint64, cmdLen int) (frames.Loc, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[nodeKey{shard, node}]
	if n == nil || !n.has(index) {
		return frames.Loc{}, false
	}
	if l := n.locs[index-n.first]; l.framed() {
		return CommandIn(l.frame(), cmdLen)
	}
	return frames.Loc{}, false
}

// CommandIn is where the command (cmdLen bytes) of the marshaled Raft
// entry at entry lies: Dragonboat's entry encoding ends with the command
// and one terminating byte.
func CommandIn(entry frames.Loc, cmdLen int) (frames.Loc, bool) {
	if int64(cmdLen)+1 > int64(entry.Size) {
		return frames.Loc{}, false
	}
	return frames.Loc{File: entry.File, Off: entry.Off + int64(entry.Size) - 1 - int64(cmdLen), Size: uint32(cmdLen)}, true
}

// readFrame reads a framed entry from its group's frame log.
func (s *Store) readFrame(shard uint64, l loc) ([]byte, error) {
	fl := s.frameLog(shard)
	if fl == nil {
		return nil, errors.New("its frame log is not open")
	}
	return fl.Read(l.frame())
}

// ReadRaftState implements raftio.ILogDB.
func (s *Store) ReadRaftState(shard, nodeID, snapshotIndex uint64) (raftio.RaftState, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[nodeKey{shard, nodeID}]
	if n == nil {
		return raftio.RaftState{}, raftio.ErrNoSavedLog
	}
	first, count, err := n.rangeFrom(snapshotIndex)
	if err != nil {
		return raftio.RaftState{}, err
	}
	if !n.hasState {
		return raftio.RaftState{}, raftio.ErrNoSavedLog
	}
	return raftio.RaftState{State: n.state, FirstIndex: first, EntryCount: count}, nil
}

// RemoveEntriesTo implements raftio.ILogDB. The removal is not written:
// a replay that brings removed entries back finds them intact, since a
// file is deleted only after a durable checkpoint no longer points into it.
func (s *Store) RemoveEntriesTo(shard, nodeID, index uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.nodes[nodeKey{shard, nodeID}]; n != nil {
		n.removeBefore(index)
		if fl := s.frameLog(shard); fl != nil {
			fl.ReleaseRaft(n.firstFrameFile())
		}
	}
	return nil
}

// CompactEntriesTo implements raftio.ILogDB: space comes back when files
// roll, so there is nothing to wait for.
func (s *Store) CompactEntriesTo(shard, nodeID, index uint64) (<-chan struct{}, error) {
	done := make(chan struct{})
	close(done)
	return done, nil
}

// SaveSnapshots implements raftio.ILogDB.
func (s *Store) SaveSnapshots(updates []pb.Update) error {
	rec := newRecord(kindSnapshots, 128*len(updates))
	count := 0
	for _, ud := range updates {
		if ud.Snapshot.Index > 0 {
			count++
		}
	}
	if count == 0 {
		return nil
	}
	rec = binary.AppendUvarint(rec, uint64(count))
	for _, ud := range updates {
		if ud.Snapshot.Index > 0 {
			rec = appendNode(rec, nodeKey{ud.ClusterID, ud.NodeID})
			rec = appendBytes(rec, marshalSnapshot(ud.Snapshot))
		}
	}
	return s.appendRecord(seal(rec))
}

// DeleteSnapshot implements raftio.ILogDB.
func (s *Store) DeleteSnapshot(shard, nodeID, index uint64) error {
	rec := newRecord(kindDeleteSnapshot, 24)
	rec = appendNode(rec, nodeKey{shard, nodeID})
	rec = binary.AppendUvarint(rec, index)
	return s.appendRecord(seal(rec))
}

// ListSnapshots implements raftio.ILogDB: the snapshots at or below index,
// oldest first.
func (s *Store) ListSnapshots(shard, nodeID, index uint64) ([]pb.Snapshot, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []pb.Snapshot{}
	if n := s.nodes[nodeKey{shard, nodeID}]; n != nil {
		for _, ss := range n.snapshots {
			if ss.Index <= index {
				out = append(out, ss)
			}
		}
	}
	return out, nil
}

// RemoveNodeData implements raftio.ILogDB.
func (s *Store) RemoveNodeData(shard, nodeID uint64) error {
	rec := newRecord(kindRemoveNode, 24)
	rec = appendNode(rec, nodeKey{shard, nodeID})
	return s.appendRecord(seal(rec))
}

// ImportSnapshot implements raftio.ILogDB as Dragonboat's own store does:
// the node restarts from the snapshot as a joining member, and snapshot
// records at or after it are dropped.
func (s *Store) ImportSnapshot(ss pb.Snapshot, nodeID uint64) error {
	if ss.Type == pb.UnknownStateMachine {
		return errors.New("raftlog: snapshot of an unknown state machine type")
	}
	k := nodeKey{ss.ClusterId, nodeID}
	bs := pb.Bootstrap{Join: true, Type: ss.Type}
	b, err := bs.Marshal()
	if err != nil {
		return err
	}
	s.mu.RLock()
	image := &nodeLog{bootstrap: b, state: pb.State{Term: ss.Term, Commit: ss.Index}, hasState: true, maxIndex: ss.Index, hasMax: true}
	if n := s.nodes[k]; n != nil {
		for _, old := range n.snapshots {
			if old.Index < ss.Index {
				image.snapshots = append(image.snapshots, old)
			}
		}
		image.first, image.locs = n.first, append([]loc(nil), n.locs...)
		image.truncateAfter(ss.Index)
	}
	s.mu.RUnlock()
	image.addSnapshot(ss)
	rec := newRecord(kindNodeImage, 256)
	rec = appendNodeImage(rec, k, image)
	return s.appendRecord(seal(rec))
}

// RestartAlone rewrites a stopped Raft node's state for a forced recovery
// of its group (meta.RecoverPartition), which lost a quorum of its voters'
// data: the membership of its latest snapshot becomes the node alone, at
// addr, every other member removed for good, so that it elects itself and
// commits what it holds. Its entries after the snapshot, which it did not
// know to be committed, are kept up to the first membership change among
// them: applied, that change would bring back a voter that no longer
// exists. The snapshot must cover every entry the node knew committed.
// It returns the index of the last entry kept.
func (s *Store) RestartAlone(shard, node uint64, addr string) (uint64, error) {
	k := nodeKey{shard, node}
	s.mu.RLock()
	n := s.nodes[k]
	if n == nil || len(n.snapshots) == 0 {
		s.mu.RUnlock()
		return 0, fmt.Errorf("raftlog: shard %d node %d has no snapshot", shard, node)
	}
	latest := n.snapshots[len(n.snapshots)-1]
	if latest.Index < n.state.Commit {
		s.mu.RUnlock()
		return 0, fmt.Errorf("raftlog: shard %d node %d: snapshot at %d is behind commit %d", shard, node, latest.Index, n.state.Commit)
	}
	maxIndex := latest.Index
	if n.hasMax && n.maxIndex > maxIndex {
		maxIndex = n.maxIndex
	}
	s.mu.RUnlock()
	keep := latest.Index
	for low := latest.Index + 1; low <= maxIndex; {
		ents, _, err := s.IterateEntries(nil, 0, shard, node, low, maxIndex+1, 1<<20)
		if err != nil {
			return 0, err
		}
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			if e.Type == pb.ConfigChangeEntry {
				low = maxIndex + 1
				break
			}
			keep = e.Index
		}
		if low <= maxIndex {
			low = ents[len(ents)-1].Index + 1
		}
	}
	ss := latest
	ss.Membership = aloneIn(latest.Membership, node, addr)
	s.mu.RLock()
	image := &nodeLog{bootstrap: n.bootstrap, state: n.state, hasState: n.hasState, maxIndex: keep, hasMax: true,
		snapshots: append([]pb.Snapshot(nil), n.snapshots[:len(n.snapshots)-1]...), first: n.first, locs: append([]loc(nil), n.locs...)}
	s.mu.RUnlock()
	image.truncateAfter(keep)
	image.addSnapshot(ss)
	rec := newRecord(kindNodeImage, 256)
	rec = appendNodeImage(rec, k, image)
	return keep, s.appendRecord(seal(rec))
}

// aloneIn is membership m with node its only voter and every other member
// removed.
func aloneIn(m pb.Membership, node uint64, addr string) pb.Membership {
	out := pb.Membership{ConfigChangeId: m.ConfigChangeId, Addresses: map[uint64]string{node: addr}, Removed: map[uint64]bool{}}
	for id := range m.Removed {
		out.Removed[id] = true
	}
	for _, members := range []map[uint64]string{m.Addresses, m.Observers, m.Witnesses} {
		for id := range members {
			if id != node {
				out.Removed[id] = true
			}
		}
	}
	return out
}

// LastEntry is the index and term of a Raft node's last entry, or of its
// latest snapshot when no entry follows it; zeros for a node it does not
// hold.
func (s *Store) LastEntry(shard, node uint64) (index, term uint64, err error) {
	s.mu.RLock()
	n := s.nodes[nodeKey{shard, node}]
	if n == nil {
		s.mu.RUnlock()
		return 0, 0, nil
	}
	if len(n.snapshots) > 0 {
		ss := n.snapshots[len(n.snapshots)-1]
		index, term = ss.Index, ss.Term
	}
	last, hasMax := n.maxIndex, n.hasMax
	s.mu.RUnlock()
	if !hasMax || last <= index {
		return index, term, nil
	}
	ents, _, err := s.IterateEntries(nil, 0, shard, node, last, last+1, 1)
	if err != nil || len(ents) == 0 {
		return index, term, err
	}
	return ents[0].Index, ents[0].Term, nil
}
