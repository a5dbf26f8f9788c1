package raftlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lni/dragonboat/v3/raftio"
	pb "github.com/lni/dragonboat/v3/raftpb"

	"github.com/raftka/raftka/broker/frames"
)

func entry(index, term uint64, size int) pb.Entry {
	cmd := make([]byte, size)
	for i := range cmd {
		cmd[i] = byte(index*31 + term*7 + uint64(i))
	}
	return pb.Entry{Index: index, Term: term, Cmd: cmd}
}

func entries(first, last, term uint64, size int) []pb.Entry {
	var out []pb.Entry
	for i := first; i <= last; i++ {
		out = append(out, entry(i, term, size))
	}
	return out
}

func mustOpen(t *testing.T, dir string, fileBytes int64) *Store {
	t.Helper()
	s, err := Open(dir, fileBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// reopen opens the store again, with the frame logs it had.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFramed(s.dir, s.fileBytes, s.frameLogs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testFrames is frames.Logs over the frame logs a test opened, each in
// root's frames-SHARD-NODE.
type testFrames struct {
	root string
	mu   sync.Mutex
	logs map[uint64]*frames.Log
}

func newTestFrames(root string) *testFrames {
	return &testFrames{root: root, logs: map[uint64]*frames.Log{}}
}

func (f *testFrames) Writer(shard uint64) frames.Writer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.logs[shard]; fl != nil {
		return fl
	}
	return nil // not a nil *frames.Log, which would be a Writer
}

func (f *testFrames) Dir(shard, node uint64) string {
	return filepath.Join(f.root, fmt.Sprintf("frames-%d-%d", shard, node))
}

// open opens shard's frame log for node 1 and gives it to the store.
func (f *testFrames) open(t *testing.T, shard uint64, fileBytes int64) *frames.Log {
	t.Helper()
	fl, err := frames.Open(f.Dir(shard, 1), fileBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fl.Close)
	f.mu.Lock()
	f.logs[shard] = fl
	f.mu.Unlock()
	return fl
}

// mustOpenFramed opens a store in dir whose frame logs are logs.
func mustOpenFramed(t *testing.T, dir string, fileBytes int64, logs frames.Logs) *Store {
	t.Helper()
	s, err := OpenFramed(dir, fileBytes, logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func save(t *testing.T, s *Store, uds ...pb.Update) {
	t.Helper()
	if err := s.SaveRaftState(uds, 1); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s *Store, shard, low, high uint64) []pb.Entry {
	t.Helper()
	ents, _, err := s.IterateEntries(nil, 0, shard, 1, low, high, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	return ents
}

func sameEntries(t *testing.T, what string, got, want []pb.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].Index != want[i].Index || got[i].Term != want[i].Term || !bytes.Equal(got[i].Cmd, want[i].Cmd) {
			t.Fatalf("%s: entry %d is index %d term %d, want index %d term %d (or other bytes)", what, i, got[i].Index, got[i].Term, want[i].Index, want[i].Term)
		}
	}
}

func TestStateAndEntriesSurviveReopen(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 0)
	if err := s.SaveBootstrapInfo(7, 1, pb.Bootstrap{Addresses: map[uint64]string{1: "a:1"}, Type: pb.OnDiskStateMachine}); err != nil {
		t.Fatal(err)
	}
	save(t, s, pb.Update{ClusterID: 7, NodeID: 1, State: pb.State{Term: 3, Vote: 1, Commit: 2}, EntriesToSave: entries(1, 5, 3, 100)})
	for round := 0; round < 2; round++ {
		sameEntries(t, "all", read(t, s, 7, 1, 6), entries(1, 5, 3, 100))
		rs, err := s.ReadRaftState(7, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rs.State.Term != 3 || rs.State.Commit != 2 || rs.FirstIndex != 1 || rs.EntryCount != 5 {
			t.Fatalf("raft state %+v", rs)
		}
		bs, err := s.GetBootstrapInfo(7, 1)
		if err != nil || bs.Addresses[1] != "a:1" || bs.Type != pb.OnDiskStateMachine {
			t.Fatalf("bootstrap %+v %v", bs, err)
		}
		infos, _ := s.ListNodeInfo()
		if len(infos) != 1 || infos[0].ClusterID != 7 {
			t.Fatalf("node infos %+v", infos)
		}
		s = reopen(t, s)
	}
	if _, err := s.ReadRaftState(8, 1, 0); err != raftio.ErrNoSavedLog {
		t.Fatalf("unknown node: %v", err)
	}
	if _, err := s.GetBootstrapInfo(8, 1); err != raftio.ErrNoBootstrapInfo {
		t.Fatalf("unknown node: %v", err)
	}
}

func TestLaterEntriesReplaceTheTail(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 0)
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: entries(1, 10, 1, 10)})
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 2}, EntriesToSave: entries(5, 7, 2, 10)})
	want := append(entries(1, 4, 1, 10), entries(5, 7, 2, 10)...)
	for round := 0; round < 2; round++ {
		sameEntries(t, "after the new leader's entries", read(t, s, 1, 1, 11), want)
		s = reopen(t, s)
	}
}

func TestSnapshotInAnUpdateEndsTheLog(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 0)
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: entries(1, 10, 1, 10)})
	ss := pb.Snapshot{Index: 6, Term: 1, Type: pb.OnDiskStateMachine}
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, Snapshot: ss})
	for round := 0; round < 2; round++ {
		rs, err := s.ReadRaftState(1, 1, 6)
		if err != nil || rs.FirstIndex != 6 || rs.EntryCount != 0 {
			t.Fatalf("raft state %+v %v", rs, err)
		}
		sameEntries(t, "up to the snapshot", read(t, s, 1, 1, 11), entries(1, 6, 1, 10))
		list, _ := s.ListSnapshots(1, 1, 100)
		if len(list) != 1 || list[0].Index != 6 {
			t.Fatalf("snapshots %+v", list)
		}
		s = reopen(t, s)
	}
}

func TestSnapshotRecords(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 0)
	var uds []pb.Update
	for _, i := range []uint64{30, 10, 20} {
		uds = append(uds, pb.Update{ClusterID: 1, NodeID: 1, Snapshot: pb.Snapshot{Index: i, Term: 1, Type: pb.OnDiskStateMachine}})
	}
	if err := s.SaveSnapshots(uds); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSnapshot(1, 1, 20); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		list, _ := s.ListSnapshots(1, 1, 25)
		if len(list) != 1 || list[0].Index != 10 {
			t.Fatalf("snapshots up to 25: %+v", list)
		}
		list, _ = s.ListSnapshots(1, 1, 100)
		if len(list) != 2 || list[0].Index != 10 || list[1].Index != 30 {
			t.Fatalf("all snapshots: %+v", list)
		}
		s = reopen(t, s)
	}
	if err := s.ImportSnapshot(pb.Snapshot{ClusterId: 1, Index: 25, Term: 4, Type: pb.OnDiskStateMachine}, 1); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		list, _ := s.ListSnapshots(1, 1, 100)
		if len(list) != 2 || list[0].Index != 10 || list[1].Index != 25 {
			t.Fatalf("after import: %+v", list)
		}
		rs, err := s.ReadRaftState(1, 1, 25)
		if err != nil || rs.State.Term != 4 || rs.State.Commit != 25 || rs.EntryCount != 0 {
			t.Fatalf("after import: %+v %v", rs, err)
		}
		bs, err := s.GetBootstrapInfo(1, 1)
		if err != nil || !bs.Join {
			t.Fatalf("after import: %+v %v", bs, err)
		}
		s = reopen(t, s)
	}
	if err := s.RemoveNodeData(1, 1); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if list, _ := s.ListSnapshots(1, 1, 100); len(list) != 0 {
		t.Fatalf("after removal: %+v", list)
	}
	if infos, _ := s.ListNodeInfo(); len(infos) != 0 {
		t.Fatalf("after removal: %+v", infos)
	}
}

func walFiles(t *testing.T, dir string) []uint32 {
	t.Helper()
	nos, err := fileNumbers(dir)
	if err != nil {
		t.Fatal(err)
	}
	return nos
}

// A busy group compacts its log while a quiet one keeps its only entries
// in the first file: the files are still deleted, the quiet group's
// entries copied forward, and the busy group's entries never are (they
// are about to be compacted), also when it keeps more than a file of log.
func TestFilesGoOnceTheirEntriesAreRemoved(t *testing.T) {
	for _, keep := range []uint64{10, 20} {
		t.Run(fmt.Sprintf("busy group keeps %d entries of 4 KB", keep), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, 64<<10)
			save(t, s, pb.Update{ClusterID: 2, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: entries(1, 3, 1, 50)})
			var index uint64
			for i := 0; i < 400; i++ {
				index++
				save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1, Commit: index}, EntriesToSave: []pb.Entry{entry(index, 1, 4000)}})
				if index > 2*keep {
					if err := s.RemoveEntriesTo(1, 1, index-keep); err != nil {
						t.Fatal(err)
					}
				}
			}
			if files := walFiles(t, dir); len(files) > 4 || files[0] == 1 {
				t.Fatalf("files %v for %d live entries of 4 KB and 3 small ones, which the first file held", files, keep+1)
			}
			// The quiet group's 3 entries, copied about once every other
			// roll of 25 rolls: about 2 KB. Copying busy entries is 100s of KB.
			if st := s.Stats(); st.RelocatedBytes == 0 || st.RelocatedBytes > 16<<10 || st.Files != len(walFiles(t, dir)) || st.Syncs == 0 {
				t.Fatalf("stats %+v", st)
			}
			for round := 0; round < 2; round++ {
				sameEntries(t, "quiet group", read(t, s, 2, 1, 4), entries(1, 3, 1, 50))
				sameEntries(t, "busy group", read(t, s, 1, index-keep, index+1), entries(index-keep, index, 1, 4000))
				s = reopen(t, s)
			}
		})
	}
}

func TestTornTailIsDropped(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, 0)
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: entries(1, 5, 1, 100)})
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, EntriesToSave: entries(6, 8, 1, 100)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	last, _ := newestFile(t, dir)
	// Cut the last record in half, as a crash in its write would.
	if err := os.Truncate(last, recordsEnd(t, last)-150); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, 0)
	sameEntries(t, "after the torn write", read(t, s, 1, 1, 10), entries(1, 5, 1, 100))
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, EntriesToSave: entries(6, 6, 2, 100)})
	s = reopen(t, s)
	sameEntries(t, "written after", read(t, s, 1, 1, 10), append(entries(1, 5, 1, 100), entry(6, 2, 100)))
}

// closedStore is the directory of a closed store holding entries 1 to 5
// of shard 1.
func closedStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := mustOpen(t, dir, 0)
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: entries(1, 5, 1, 100)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestNewFileWithoutCheckpointIsIgnored(t *testing.T) {
	dir := closedStore(t)
	_, no := newestFile(t, dir)
	torn := filepath.Join(dir, fmt.Sprintf("%08d.wal", no+1))
	if err := os.WriteFile(torn, []byte{0, 0, 1, 0, 9, 9}, 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, dir, 0)
	sameEntries(t, "after a torn roll", read(t, s, 1, 1, 10), entries(1, 5, 1, 100))
}

// newestFile is the path of the store's newest file, and its number.
func newestFile(t *testing.T, dir string) (string, uint32) {
	t.Helper()
	files := walFiles(t, dir)
	no := files[len(files)-1]
	return filepath.Join(dir, fmt.Sprintf("%08d.wal", no)), no
}

// recordsEnd is where the valid records of the .wal file at path end: its
// size but for the zeros written ahead of them (zeroAhead).
func recordsEnd(t *testing.T, path string) int64 {
	t.Helper()
	no, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), ".wal"), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	end, err := (&Store{dir: filepath.Dir(path)}).eachRecord(uint32(no), func(int64, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// remask rewrites the CRC masks of every record in a file.
func remask(t *testing.T, path string, from, to uint32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off+recordHeader <= len(b); {
		size := int(binary.BigEndian.Uint32(b[off:]))
		crc := binary.BigEndian.Uint32(b[off+4:])
		binary.BigEndian.PutUint32(b[off+4:], crc^from^to)
		off += recordHeader + size
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file is written over once emptied, so bytes past its records can be
// records of its earlier life, whole and CRC-valid: they must not be
// replayed. A record masked for this file is, as a control.
func TestRecordsOfAnotherFileAreNotReplayed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maskedAs func(no uint32) uint32
		applied  bool
	}{
		{"this file", func(no uint32) uint32 { return no }, true},
		{"an earlier file", func(no uint32) uint32 { return no - 1 }, false},
		{"a legacy file", func(uint32) uint32 { return 0 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, 0)
			save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1, Commit: 5}, EntriesToSave: entries(1, 5, 1, 100)})
			s = reopen(t, s) // the newest file is now the second
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path, no := newestFile(t, dir)
			rec, err := updatesRecord([]pb.Update{{ClusterID: 1, NodeID: 1, State: pb.State{Term: 9, Commit: 3}, EntriesToSave: entries(3, 3, 9, 100)}}, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			binary.BigEndian.PutUint32(rec[4:], binary.BigEndian.Uint32(rec[4:])^fileMask(tc.maskedAs(no)))
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(rec, recordsEnd(t, path)); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			s = mustOpen(t, dir, 0)
			want, term := entries(1, 5, 1, 100), uint64(1)
			if tc.applied {
				want, term = append(entries(1, 2, 1, 100), entry(3, 9, 100)), 9
			}
			sameEntries(t, "after the open", read(t, s, 1, 1, 10), want)
			if st, err := s.ReadRaftState(1, 1, 0); err != nil || st.State.Term != term {
				t.Fatalf("state %+v, %v: want term %d", st.State, err, term)
			}
		})
	}
}

// Files written before CRCs were masked are read as they are.
func TestLegacyFilesAreReplayed(t *testing.T) {
	dir := closedStore(t)
	path, no := newestFile(t, dir)
	remask(t, path, fileMask(no), 0)
	s := mustOpen(t, dir, 0)
	sameEntries(t, "from a legacy file", read(t, s, 1, 1, 10), entries(1, 5, 1, 100))
	s = reopen(t, s)
	sameEntries(t, "reopened", read(t, s, 1, 1, 10), entries(1, 5, 1, 100))
}

func names(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Emptied files are kept as spares and written over by later rolls, also
// across reopens, and what is read back is what was written last.
func TestSpareFilesAreWrittenOver(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, 64<<10)
	var index uint64
	busy := func(saves int) {
		for i := 0; i < saves; i++ {
			index++
			save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1, Commit: index}, EntriesToSave: []pb.Entry{entry(index, 1, 4000)}})
			if index > 20 {
				if err := s.RemoveEntriesTo(1, 1, index-10); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	busy(200)
	// About 3 files of 64 KiB each roll: after the first two, each roll
	// empties one file and writes over the one the roll before emptied.
	if st := s.Stats(); st.SpareFiles == 0 || st.ReusedFiles < 8 {
		t.Fatalf("stats %+v: spares not written over", st)
	}
	// A reopen replays a file written over, and may start a new file
	// where no spare is left; the files taken up are then written over.
	for round := 0; round < 5; round++ {
		busy(60)
		s = reopen(t, s)
		sameEntries(t, fmt.Sprintf("round %d", round), read(t, s, 1, index-10, index+1), entries(index-10, index, 1, 4000))
	}
	if n := len(names(t, dir)); n > 5 {
		t.Fatalf("%d files for 11 live entries of 4 KB in files of 64 KiB", n)
	}
}

func TestIterateStopsPastMaxSize(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 0)
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: entries(1, 10, 1, 1000)})
	ents, size, err := s.IterateEntries(nil, 0, 1, 1, 1, 11, 2500)
	if err != nil {
		t.Fatal(err)
	}
	// Dragonboat's rule: entries are taken until the size exceeds the
	// limit, the one that exceeds it included.
	if len(ents) != 3 || size <= 2500 {
		t.Fatalf("%d entries, %d bytes", len(ents), size)
	}
	if err := s.RemoveEntriesTo(1, 1, 4); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s, 1, 1, 11); len(got) != 0 {
		t.Fatalf("read from a removed index: %d entries", len(got))
	}
	sameEntries(t, "from the first kept", read(t, s, 1, 4, 11), entries(4, 10, 1, 1000))
}

// model is what the store should hold for one node.
type model struct {
	ents     map[uint64]pb.Entry
	maxIndex uint64
	removed  uint64 // entries below are gone
	state    pb.State
}

// TestStoreMatchesAModel runs random saves, snapshots, removals, rolls and
// reopens against several nodes, and compares every node's entries and
// state with a plain model after each step.
func TestStoreMatchesAModel(t *testing.T) { storeMatchesAModel(t, nil) }

// Groups 2 and 4 keep their entries in frame logs, beside groups that
// keep them in the store, in the same records.
func TestStoreWithFramedGroupsMatchesAModel(t *testing.T) {
	logs := newTestFrames(t.TempDir())
	for _, c := range []uint64{2, 4} {
		logs.open(t, c, 64<<10)
	}
	storeMatchesAModel(t, logs)
}

func storeMatchesAModel(t *testing.T, logs frames.Logs) {
	rng := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	s := mustOpenFramed(t, dir, 32<<10, logs)
	models := map[uint64]*model{}
	for c := uint64(1); c <= 4; c++ {
		models[c] = &model{ents: map[uint64]pb.Entry{}}
	}
	term := uint64(1)
	for step := 0; step < 3000; step++ {
		c := uint64(rng.Intn(4) + 1)
		m := models[c]
		switch op := rng.Intn(20); {
		case op < 12: // append, sometimes over the tail
			first := m.maxIndex + 1
			if m.maxIndex > m.removed+1 && rng.Intn(4) == 0 {
				first = m.removed + 1 + uint64(rng.Intn(int(m.maxIndex-m.removed)))
				term++
			}
			if first <= m.removed {
				first = m.removed + 1
			}
			ents := entries(first, first+uint64(rng.Intn(5)), term, rng.Intn(3000))
			m.state = pb.State{Term: term, Commit: first}
			save(t, s, pb.Update{ClusterID: c, NodeID: 1, State: m.state, EntriesToSave: ents})
			for i := range m.ents {
				if i >= first {
					delete(m.ents, i)
				}
			}
			for _, e := range ents {
				m.ents[e.Index] = e
			}
			m.maxIndex = ents[len(ents)-1].Index
		case op < 16: // compaction
			if m.maxIndex > 0 {
				to := m.removed + uint64(rng.Intn(int(m.maxIndex-m.removed)+1))
				if err := s.RemoveEntriesTo(c, 1, to); err != nil {
					t.Fatal(err)
				}
				if to > m.removed {
					m.removed = to
				}
			}
		case op < 18:
			s = reopen(t, s)
		default: // a parallel writer of another node, to mix records
			save(t, s, pb.Update{ClusterID: 100, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: []pb.Entry{entry(uint64(step+1), 1, 10)}})
		}
		for c, m := range models {
			if m.maxIndex == 0 {
				continue
			}
			var want []pb.Entry
			for i := max(m.removed, 1); i <= m.maxIndex; i++ {
				if e, ok := m.ents[i]; ok {
					want = append(want, e)
				}
			}
			sameEntries(t, fmt.Sprintf("step %d, shard %d", step, c), read(t, s, c, max(m.removed, 1), m.maxIndex+5), want)
		}
	}
	if files := walFiles(t, dir); len(files) > 8 {
		t.Fatalf("%d files left", len(files))
	}
}

// TestConcurrentSavesAndReads is for the race detector: writers of
// different nodes roll files while readers read.
func TestConcurrentSavesAndReads(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 16<<10)
	var wg sync.WaitGroup
	for c := uint64(1); c <= 4; c++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= 200; i++ {
				if err := s.SaveRaftState([]pb.Update{{ClusterID: c, NodeID: 1, State: pb.State{Term: 1, Commit: i}, EntriesToSave: []pb.Entry{entry(i, 1, 500)}}}, c); err != nil {
					t.Error(err)
					return
				}
				if i > 10 {
					_ = s.RemoveEntriesTo(c, 1, i-5)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				ents, _, err := s.IterateEntries(nil, 0, c, 1, 1, 1000, 1<<30)
				if err != nil {
					t.Error(err)
					return
				}
				for j := 1; j < len(ents); j++ {
					if ents[j].Index != ents[j-1].Index+1 {
						t.Errorf("gap in what was read")
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for c := uint64(1); c <= 4; c++ {
		sameEntries(t, "end", read(t, s, c, 195, 201), entries(195, 200, 1, 500))
	}
}

// A store over a budget names the groups whose entries are in the files
// that must go for the rest to fit; once those groups compacted, Reclaim
// deletes the files without waiting for the active one to fill, and a
// quiet group's last entries are copied forward rather than kept pinning.
func TestReclaimAfterTheGroupsPinningOldFilesCompacted(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, 64<<10)
	save(t, s, pb.Update{ClusterID: 3, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: entries(1, 2, 1, 100)})
	for i := uint64(1); i <= 60; i++ {
		save(t, s, pb.Update{ClusterID: 1 + i%2, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: []pb.Entry{entry((i+1)/2, 1, 4000)}})
	}
	if got := s.GroupsPinningOldest(1 << 30); len(got) != 0 {
		t.Fatalf("within the budget: groups %v", got)
	}
	if got := s.GroupsPinningOldest(64 << 10); fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("over the budget: groups %v, want [1 2 3]", got)
	}
	if rolled, err := s.Reclaim(); err != nil || rolled {
		t.Fatalf("reclaim with every file live: rolled %v, %v", rolled, err)
	}
	before := len(walFiles(t, dir))
	for _, c := range []uint64{1, 2} {
		if err := s.RemoveEntriesTo(c, 1, 30); err != nil {
			t.Fatal(err)
		}
	}
	if rolled, err := s.Reclaim(); err != nil || !rolled {
		t.Fatalf("reclaim after compaction: rolled %v, %v", rolled, err)
	}
	if after := len(walFiles(t, dir)); after >= before {
		t.Fatalf("%d files after reclaiming, %d before", after, before)
	}
	if got := s.GroupsPinningOldest(64 << 10); len(got) != 0 {
		t.Fatalf("after reclaiming: groups %v", got)
	}
	for round := 0; round < 2; round++ {
		sameEntries(t, "quiet group", read(t, s, 3, 1, 3), entries(1, 2, 1, 100))
		sameEntries(t, "compacted group", read(t, s, 1, 30, 31), []pb.Entry{entry(30, 1, 4000)})
		s = reopen(t, s)
	}
}

// A framed group's entries are written once, into its frame log: the
// store's records hold only where they are, and a reopened store reads
// them back from there.
func TestFramedEntriesAreWrittenOnce(t *testing.T) {
	logs := newTestFrames(t.TempDir())
	logs.open(t, 5, 0)
	framesDir := logs.Dir(5, 1)
	s := mustOpenFramed(t, t.TempDir(), 0, logs)
	const size = 10 << 10
	for i := uint64(0); i < 100; i += 10 {
		save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 2, Commit: i}, EntriesToSave: entries(i+1, i+10, 2, size)},
			pb.Update{ClusterID: 6, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: entries(i/10+1, i/10+1, 1, 100)})
	}
	// A new leader replaces the tail; its frames follow the dead ones.
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 3, Commit: 90}, EntriesToSave: entries(96, 98, 3, size)})
	want := append(entries(1, 95, 2, size), entries(96, 98, 3, size)...)
	for round := 0; round < 2; round++ {
		sameEntries(t, "framed group", read(t, s, 5, 1, 101), want)
		sameEntries(t, "group kept in the store", read(t, s, 6, 1, 11), entries(1, 10, 1, 100))
		if st := s.Stats(); st.Bytes > 64<<10 {
			t.Fatalf("the store's files hold %d bytes for 1 MB of framed entries", st.Bytes)
		}
		s = reopen(t, s)
	}
	var framed int64
	files, _ := filepath.Glob(filepath.Join(framesDir, "*"))
	for _, f := range files {
		st, _ := os.Stat(f)
		framed += st.Size()
	}
	if framed < 103*size || framed > 110*size {
		t.Fatalf("the frame log holds %d bytes for 103 entries of %d", framed, size)
	}
	// Without its frame log, a framed group's entries cannot be read, and
	// the store says so rather than answering without them.
	logs.mu.Lock()
	delete(logs.logs, 5)
	logs.mu.Unlock()
	if _, _, err := s.IterateEntries(nil, 0, 5, 1, 1, 10, 1<<40); err == nil {
		t.Fatal("framed entries read without their frame log")
	}
}

// EntryCommand names the command's own bytes inside a framed entry, which
// a partition's state machine serves its batches from.
func TestEntryCommandIsTheCommandsBytes(t *testing.T) {
	logs := newTestFrames(t.TempDir())
	fl := logs.open(t, 3, 0)
	s := mustOpenFramed(t, t.TempDir(), 0, logs)
	ents := []pb.Entry{entry(1, 1, 0), entry(2, 1, 1), entry(3, 1, 127), entry(4, 1, 128), entry(5, 1, 70000)}
	save(t, s, pb.Update{ClusterID: 3, NodeID: 1, State: pb.State{Term: 1}, EntriesToSave: ents})
	for _, e := range ents {
		at, ok := s.EntryCommand(3, 1, e.Index, len(e.Cmd))
		if !ok {
			t.Fatalf("entry %d: no location", e.Index)
		}
		got, err := fl.Read(at)
		if err != nil || !bytes.Equal(got, e.Cmd) {
			t.Fatalf("entry %d: %d bytes at its command's location (%v), not its %d-byte command", e.Index, len(got), err, len(e.Cmd))
		}
	}
	if _, ok := s.EntryCommand(3, 1, 9, 10); ok {
		t.Fatal("a location for an entry never saved")
	}
}

func TestRestartAloneKeepsTheLogUpToAMembershipChange(t *testing.T) {
	s := mustOpen(t, t.TempDir(), 0)
	ents := entries(1, 20, 2, 10)
	ents[14].Type = pb.ConfigChangeEntry // index 15
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 2, Vote: 2, Commit: 12}, EntriesToSave: ents})
	members := pb.Membership{ConfigChangeId: 7, Addresses: map[uint64]string{1: "a", 2: "b", 3: "c"}, Observers: map[uint64]string{4: "d"}, Removed: map[uint64]bool{9: true}}
	if err := s.SaveSnapshots([]pb.Update{{ClusterID: 1, NodeID: 1, Snapshot: pb.Snapshot{Index: 10, Term: 2, Type: pb.OnDiskStateMachine, Membership: members}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RestartAlone(1, 1, "a"); err == nil {
		t.Fatal("a snapshot behind the commit index was accepted: entries 11 and 12 would be dropped as uncommitted")
	}
	if err := s.SaveSnapshots([]pb.Update{{ClusterID: 1, NodeID: 1, Snapshot: pb.Snapshot{Index: 12, Term: 2, Type: pb.OnDiskStateMachine, Membership: members}}}); err != nil {
		t.Fatal(err)
	}
	if index, term, err := s.LastEntry(1, 1); err != nil || index != 20 || term != 2 {
		t.Fatalf("last entry %d term %d (%v), want 20 term 2", index, term, err)
	}
	last, err := s.RestartAlone(1, 1, "a")
	if err != nil || last != 14 {
		t.Fatalf("kept through %d (%v), want 14: the entries before the membership change at 15", last, err)
	}
	for round := 0; round < 2; round++ {
		list, _ := s.ListSnapshots(1, 1, 100)
		if len(list) != 2 || list[1].Index != 12 || list[0].Index != 10 {
			t.Fatalf("snapshots %+v", list)
		}
		m := list[1].Membership
		if len(m.Addresses) != 1 || m.Addresses[1] != "a" || len(m.Observers) != 0 || !m.Removed[2] || !m.Removed[3] || !m.Removed[4] || !m.Removed[9] || m.ConfigChangeId != 7 {
			t.Fatalf("membership after the restart alone: %+v", m)
		}
		rs, err := s.ReadRaftState(1, 1, 12)
		if err != nil || rs.State.Commit != 12 || rs.State.Term != 2 || rs.FirstIndex+rs.EntryCount-1 != 14 {
			t.Fatalf("raft state %+v %v", rs, err)
		}
		sameEntries(t, "kept", read(t, s, 1, 1, 21), ents[:14])
		if index, _, _ := s.LastEntry(1, 1); index != 14 {
			t.Fatalf("last entry %d after the restart alone, want 14", index)
		}
		s = reopen(t, s)
	}
}

// A record is fsynced side by side with the frames it names, so a crash
// can leave it durable with a frame torn. The replay then drops it whole,
// as the save it was that never returned (every group's part of it), and
// a later replay, once the frame log wrote new frames where the torn ones
// were, does not read it again.
// framedStore opens a store whose shard 5 keeps its entries in a frame
// log under root, saves of at most copyBytes copying them (SetCopyBytes).
func framedStore(t *testing.T, root, walDir string, copyBytes int) (*Store, *frames.Log) {
	t.Helper()
	logs := newTestFrames(root)
	// The store first, as in the broker: its replay checks and repairs
	// the frames before the frame log finds its end.
	s, err := OpenFramed(walDir, 0, logs)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := frames.Open(logs.Dir(5, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	logs.logs[5] = fl
	s.SetCopyBytes(copyBytes)
	return s, fl
}

// cutFrames cuts the last n bytes of shard 5's only frame file, as a crash
// before its fsync could.
func cutFrames(t *testing.T, root string, n int64) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "frames-5-1", "*"))
	if len(files) != 1 {
		t.Fatalf("frame files %v", files)
	}
	st, _ := os.Stat(files[0])
	if err := os.Truncate(files[0], st.Size()-n); err != nil {
		t.Fatal(err)
	}
}

func TestCopiedFramesAreWrittenAgainFromTheirRecords(t *testing.T) {
	root, walDir := t.TempDir(), t.TempDir()
	s, fl := framedStore(t, root, walDir, DefaultCopyBytes)
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 2, Vote: 1, Commit: 3}, EntriesToSave: entries(1, 3, 2, 1000)},
		pb.Update{ClusterID: 6, NodeID: 1, State: pb.State{Term: 1, Vote: 1}, EntriesToSave: entries(1, 1, 1, 100)})
	// A save larger than the copy size fsyncs its frames instead, and
	// those before it with them.
	s.SetCopyBytes(1000)
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 3, Vote: 2, Commit: 3}, EntriesToSave: entries(4, 5, 3, 1000)})
	s.SetCopyBytes(DefaultCopyBytes)
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 3, Vote: 2, Commit: 5}, EntriesToSave: entries(6, 7, 3, 1000)})
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 3, Vote: 2, Commit: 8}, EntriesToSave: entries(8, 9, 3, 1000)})
	want := append(entries(1, 3, 2, 1000), entries(4, 9, 3, 1000)...)
	sameEntries(t, "before the crash", read(t, s, 5, 1, 20), want)
	_ = s.Close()
	fl.Close()
	// The crash: the records reached the disk, the frames of the last
	// save and the last one of the save before did not; the copies in
	// the records hold them.
	cutFrames(t, root, 3000)

	s, fl = framedStore(t, root, walDir, DefaultCopyBytes)
	if s.Dropped() != 0 || s.Repaired() != 3 {
		t.Fatalf("the replay dropped %d records and repaired %d frames, want none dropped and 3 frames repaired: the last save's two and the one of the save before that the cut reached", s.Dropped(), s.Repaired())
	}
	sameEntries(t, "after the repair", read(t, s, 5, 1, 20), want)
	if rs := stateOf(t, s, 5); rs.State.Commit != 8 || rs.EntryCount != 9 {
		t.Fatalf("framed group after the replay: %+v", rs)
	}
	// The frame log found its end after the repaired frames: the next ones
	// go after them.
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 3, Vote: 2, Commit: 9}, EntriesToSave: entries(10, 10, 3, 500)})
	_ = s.Close()
	fl.Close()

	s, fl = framedStore(t, root, walDir, DefaultCopyBytes)
	t.Cleanup(fl.Close)
	t.Cleanup(func() { _ = s.Close() })
	if s.Dropped() != 0 || s.Repaired() != 0 {
		t.Fatalf("the second replay dropped %d records and repaired %d frames", s.Dropped(), s.Repaired())
	}
	sameEntries(t, "after the second replay", read(t, s, 5, 1, 20), append(want, entries(10, 10, 3, 500)...))
	rs := stateOf(t, s, 6)
	if rs.State.Term != 1 || rs.EntryCount != 1 {
		t.Fatalf("the group without frames: %+v", rs)
	}
	sameEntries(t, "the group without frames", read(t, s, 6, 1, 10), entries(1, 1, 1, 100))
}

// stateOf is a node 1's Raft state in s.
func stateOf(t *testing.T, s *Store, shard uint64) raftio.RaftState {
	t.Helper()
	rs, err := s.ReadRaftState(shard, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestRecordNamingTornFramesIsNeverWritten(t *testing.T) {
	root, walDir := t.TempDir(), t.TempDir()
	openBoth := func() (*Store, *frames.Log) { return framedStore(t, root, walDir, 0) }
	s, fl := openBoth()
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 2, Vote: 1, Commit: 3}, EntriesToSave: entries(1, 3, 2, 1000)},
		pb.Update{ClusterID: 6, NodeID: 1, State: pb.State{Term: 1, Vote: 1}, EntriesToSave: entries(1, 1, 1, 100)})
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 3, Vote: 2, Commit: 5}, EntriesToSave: entries(4, 5, 3, 1000)},
		pb.Update{ClusterID: 6, NodeID: 1, State: pb.State{Term: 2, Vote: 2}, EntriesToSave: entries(2, 2, 2, 100)})
	_ = s.Close()
	fl.Close()
	// The crash: the second save's record reached the disk, the last
	// bytes of its last frame did not.
	cutFrames(t, root, 10)

	s, fl = openBoth()
	if s.Dropped() != 1 {
		t.Fatalf("the replay dropped %d records, want the one naming a torn frame", s.Dropped())
	}
	if rs := stateOf(t, s, 5); rs.State.Term != 2 || rs.State.Vote != 1 || rs.State.Commit != 3 || rs.EntryCount != 3 {
		t.Fatalf("framed group after the replay: %+v, want the first save's state and entries 1-3", rs)
	}
	if rs := stateOf(t, s, 6); rs.State.Term != 1 || rs.EntryCount != 1 {
		t.Fatalf("the other group of the dropped save: %+v, want its first save only", rs)
	}
	sameEntries(t, "framed group", read(t, s, 5, 1, 10), entries(1, 3, 2, 1000))
	// The frame log reopened at its first torn frame; the next frames go
	// after the intact ones of the dropped save.
	save(t, s, pb.Update{ClusterID: 5, NodeID: 1, State: pb.State{Term: 4, Vote: 3, Commit: 3}, EntriesToSave: entries(4, 4, 4, 500)})
	_ = s.Close()
	fl.Close()

	s, fl = openBoth()
	t.Cleanup(fl.Close)
	t.Cleanup(func() { _ = s.Close() })
	if s.Dropped() != 0 {
		t.Fatalf("the second replay dropped %d records", s.Dropped())
	}
	if rs := stateOf(t, s, 5); rs.State.Term != 4 || rs.State.Vote != 3 {
		t.Fatalf("framed group after the second replay: %+v", rs)
	}
	sameEntries(t, "framed group", read(t, s, 5, 1, 10), append(entries(1, 3, 2, 1000), entries(4, 4, 4, 500)...))
}

// A save that only moves the commit index is written but not fsynced
// (etcd's MustSync line); a crash may lose it whole, never the entries or
// the term and vote saved before it, and the next save that must be
// durable makes it durable too.
func TestCommitOnlySavesWaitForTheNextSync(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, 0)
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 2, Vote: 3, Commit: 1}, EntriesToSave: entries(1, 5, 2, 100)})
	synced := s.Stats().Syncs
	last, _ := newestFile(t, dir)
	durableSize := recordsEnd(t, last)
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 2, Vote: 3, Commit: 5}})
	if got := s.Stats().Syncs; got != synced {
		t.Fatalf("a commit-only save fsynced: %d syncs, want %d", got, synced)
	}
	for _, change := range []pb.State{{Term: 3, Vote: 3, Commit: 5}, {Term: 3, Vote: 2, Commit: 5}} {
		save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: change})
		if got := s.Stats().Syncs; got != synced+1 {
			t.Fatalf("saving term %d vote %d: %d syncs, want %d", change.Term, change.Vote, got, synced+1)
		}
		synced++
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The crash lost everything written after the last fsync but the
	// commit-only record: the entries and the term survive.
	if err := os.Truncate(last, durableSize); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, 0)
	rs, err := s.ReadRaftState(1, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rs.State.Term != 2 || rs.State.Vote != 3 || rs.State.Commit != 1 || rs.EntryCount != 5 {
		t.Fatalf("after losing the commit-only save: %+v, %d entries; want term 2 vote 3 commit 1, 5 entries", rs.State, rs.EntryCount)
	}

	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 2, Vote: 3, Commit: 4}})
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, EntriesToSave: entries(6, 6, 2, 100)})
	last, _ = newestFile(t, dir)
	// Nothing written after the entries' fsync: a crash now keeps both.
	durableSize = recordsEnd(t, last)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, durableSize); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, 0)
	if rs, err = s.ReadRaftState(1, 1, 0); err != nil {
		t.Fatal(err)
	}
	if rs.State.Commit != 4 || rs.EntryCount != 6 {
		t.Fatalf("after a later save: %+v, %d entries; want commit 4, 6 entries", rs.State, rs.EntryCount)
	}
}

func TestGrowingFileIsWrittenAheadWithZeros(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, 0)
	for i := uint64(1); i <= 200; i++ {
		save(t, s, pb.Update{ClusterID: 1, NodeID: 1, State: pb.State{Term: 1, Commit: i}, EntriesToSave: entries(i, i, 1, 4000)})
		last, _ := newestFile(t, dir)
		st, err := os.Stat(last)
		if err != nil {
			t.Fatal(err)
		}
		if end := recordsEnd(t, last); st.Size()-end < zeroAheadBytes/2 {
			t.Fatalf("after save %d: records end at %d of %d bytes, want at least %d zeros after them", i, end, st.Size(), zeroAheadBytes/2)
		}
	}
	s = reopen(t, s)
	sameEntries(t, "after the reopen", read(t, s, 1, 1, 201), entries(1, 200, 1, 4000))
	save(t, s, pb.Update{ClusterID: 1, NodeID: 1, EntriesToSave: entries(201, 201, 1, 4000)})
	s = reopen(t, s)
	t.Cleanup(func() { _ = s.Close() })
	sameEntries(t, "written after", read(t, s, 1, 1, 202), entries(1, 201, 1, 4000))
}
