package frames

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// encoded is ps as frame payloads.
func encoded(ps [][]byte) []Payload {
	out := make([]Payload, len(ps))
	for i, p := range ps {
		out[i] = Bytes(p)
	}
	return out
}

func payloads(from, n, size int) [][]byte {
	var out [][]byte
	for i := from; i < from+n; i++ {
		out = append(out, bytes.Repeat([]byte{byte(i)}, size+i%7))
	}
	return out
}

func mustOpen(t *testing.T, dir string, fileBytes int64) *Log {
	t.Helper()
	l, err := Open(dir, fileBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func mustAppend(t *testing.T, l *Log, ps [][]byte) []Loc {
	t.Helper()
	locs, err := l.Append(encoded(ps))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Settle(locs[0].File) // as the Raft log store does once its record names them
	return locs
}

func mustRead(t *testing.T, l *Log, locs []Loc, want [][]byte) {
	t.Helper()
	for i, loc := range locs {
		got, err := l.Read(loc)
		if err != nil {
			t.Fatalf("frame %d at %+v: %v", i, loc, err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("frame %d at %+v: read %d bytes that differ from the %d appended", i, loc, len(got), len(want[i]))
		}
	}
}

func TestFramesSurviveReopenAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, 4096)
	var locs []Loc
	var want [][]byte
	for i := 0; i < 20; i++ {
		ps := payloads(i*3, 3, 500)
		locs = append(locs, mustAppend(t, l, ps)...)
		want = append(want, ps...)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*"+suffix)); len(files) < 5 {
		t.Fatalf("%d files for 30 KB at 4 KiB a file", len(files))
	}
	mustRead(t, l, locs, want)
	l.Close()
	l = mustOpen(t, dir, 4096)
	mustRead(t, l, locs, want)
	more := payloads(100, 2, 10)
	mustRead(t, l, mustAppend(t, l, more), more)
}

// A crash can tear only frames no Sync covered; the frames before them,
// which records may name, are kept, and appends continue after them.
func TestTornTailIsCutOff(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, 0)
	durable := payloads(0, 5, 300)
	locs := mustAppend(t, l, durable)
	torn := payloads(5, 3, 300)
	if _, err := l.Append(encoded(torn)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	path := filepath.Join(dir, fileName(1))
	end := locs[len(locs)-1].Off + int64(locs[len(locs)-1].Size)
	for _, cut := range []int64{end + 3, end + 8, end + 100, end + 300} {
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, dir, 0)
		mustRead(t, l, locs, durable)
		if st, _ := os.Stat(path); st.Size() != end {
			t.Fatalf("cut at %d: the file is %d bytes after the open, want the %d of its whole frames", cut, st.Size(), end)
		}
		l.Close()
	}
	// A damaged byte inside the last frame ends the run there too.
	l = mustOpen(t, dir, 0)
	more := mustAppend(t, l, torn[:1])
	l.Close()
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	if _, err := f.WriteAt([]byte{0xff}, more[0].Off+10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	l = mustOpen(t, dir, 0)
	if _, err := l.Read(more[0]); !errors.Is(err, ErrMissing) {
		t.Fatalf("read of the damaged frame: %v, want ErrMissing", err)
	}
	mustRead(t, l, locs, durable)
}

func TestConcurrentAppendsAndSyncs(t *testing.T) {
	l := mustOpen(t, t.TempDir(), 64<<10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[Loc][]byte{}
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			for i := 0; i < 50; i++ {
				ps := [][]byte{[]byte(fmt.Sprintf("writer %d frame %d", w, i))}
				locs, err := l.Append(encoded(ps))
				if err == nil {
					err = l.Sync()
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[locs[0]] = ps[0]
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for loc, want := range got {
		mustRead(t, l, []Loc{loc}, [][]byte{want})
	}
	if len(got) != 200 {
		t.Fatalf("%d distinct locations for 200 frames", len(got))
	}
}

// A file goes once neither Raft nor the partition's log needs it, never
// the active one, and a reader holding it finishes its read.
func TestFilesGoWhenBothUsersAreDone(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, 1000)
	var locs []Loc
	for i := 0; i < 10; i++ {
		locs = append(locs, mustAppend(t, l, payloads(i, 1, 1000))...)
	}
	count := func() int { n, _ := l.Files(); return n }
	if count() != 10 {
		t.Fatalf("%d files, want one per 1000-byte frame", count())
	}
	l.ReleaseRaft(5)
	if count() != 10 {
		t.Fatal("files went while the partition's log still needs them")
	}
	l.ReleaseData(3)
	if count() != 8 || locs[1].File != 2 {
		t.Fatalf("%d files after both released below 3, want 8", count())
	}
	if _, err := l.Read(locs[1]); !errors.Is(err, ErrMissing) {
		t.Fatalf("read of a released frame: %v", err)
	}
	mustRead(t, l, locs[2:], payloadsAt(locs[2:], 2))
	l.ReleaseData(NoFile)
	l.ReleaseRaft(NoFile)
	if count() != 1 {
		t.Fatalf("%d files with nothing needed, want the active one", count())
	}
	l.Close()
	if files, _ := filepath.Glob(filepath.Join(dir, "*"+suffix)); len(files) != 1 {
		t.Fatalf("%d files on disk", len(files))
	}
}

// payloadsAt is what this test appended at locs, the first being its
// frame from.
func payloadsAt(locs []Loc, from int) [][]byte {
	var out [][]byte
	for i := range locs {
		out = append(out, payloads(from+i, 1, 1000)[0])
	}
	return out
}

// When neither user needs any frame there is, the active file goes too,
// an empty one taking its place; a frame appended after either said so
// keeps it.
func TestActiveFileGoesWhenNothingIsNeeded(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, 0)
	mustAppend(t, l, payloads(0, 3, 100))
	l.ReleaseRaft(NoFile)
	kept := mustAppend(t, l, payloads(3, 1, 100)) // Raft needs this one
	l.ReleaseData(NoFile)
	mustRead(t, l, kept, payloads(3, 1, 100))
	l.ReleaseRaft(NoFile)
	if n, bytes := l.Files(); n != 1 || bytes != 0 {
		t.Fatalf("%d files of %d bytes when nothing is needed, want one empty file", n, bytes)
	}
	if _, err := l.Read(kept[0]); !errors.Is(err, ErrMissing) {
		t.Fatalf("read of a released frame: %v", err)
	}
	more := mustAppend(t, l, payloads(4, 1, 100))
	if more[0].File <= kept[0].File {
		t.Fatalf("a new frame in file %d after file %d went", more[0].File, kept[0].File)
	}
	l.Close()
	l = mustOpen(t, dir, 0)
	mustRead(t, l, more, payloads(4, 1, 100))
}

// Frames whose caller has not yet recorded where they are stay, whatever
// the marks say, and so does a file a segment comes to point into after
// the partition's last mark.
func TestUnsettledAndHeldFilesStay(t *testing.T) {
	l := mustOpen(t, t.TempDir(), 1000)
	settled := mustAppend(t, l, payloads(0, 1, 1000))
	pending, err := l.Append(encoded(payloads(1, 1, 1000))) // not settled yet
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, payloads(2, 1, 1000))
	l.ReleaseData(NoFile)
	l.ReleaseRaft(NoFile)
	if _, err := l.Read(settled[0]); !errors.Is(err, ErrMissing) {
		t.Fatalf("a settled frame nobody needs is still there: %v", err)
	}
	if _, err := l.Read(pending[0]); err != nil {
		t.Fatalf("an unsettled frame went: %v", err)
	}
	// The partition's log comes to point into the pending frame's file
	// after its last mark, and Raft then compacts past it.
	l.HoldData(pending[0].File)
	l.Settle(pending[0].File)
	l.ReleaseRaft(NoFile)
	if _, err := l.Read(pending[0]); err != nil {
		t.Fatalf("a frame the partition's log points into went: %v", err)
	}
	l.ReleaseData(NoFile)
	if _, err := l.Read(pending[0]); !errors.Is(err, ErrMissing) {
		t.Fatalf("a frame nobody needs is still there: %v", err)
	}
}

// Durable tells a frame on disk whole from one a crash tore, before the
// log is opened; a file released since counts as durable.
func TestDurableTellsTornFrames(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	locs, err := l.Append([]Payload{Bytes("first frame"), Bytes("second frame")})
	if err != nil || l.Sync() != nil {
		t.Fatal(err)
	}
	l.Close()
	for i, loc := range locs {
		if ok, err := Durable(dir, loc); !ok || err != nil {
			t.Fatalf("frame %d: durable %v %v", i, ok, err)
		}
	}
	path := filepath.Join(dir, fileName(locs[1].File))
	if err := os.Truncate(path, locs[1].Off+int64(locs[1].Size)-1); err != nil {
		t.Fatal(err)
	}
	if ok, _ := Durable(dir, locs[1]); ok {
		t.Fatal("a cut-off frame is durable")
	}
	f, _ := os.OpenFile(path, os.O_WRONLY, 0)
	_, _ = f.WriteAt([]byte{'X'}, locs[0].Off)
	f.Close()
	if ok, _ := Durable(dir, locs[0]); ok {
		t.Fatal("a frame whose bytes changed is durable")
	}
	if ok, err := Durable(dir, Loc{File: 99, Off: 8, Size: 4}); !ok || err != nil {
		t.Fatalf("a frame of a file released since: %v %v", ok, err)
	}
}

// splitPayload is a payload that Append writes from where its middle lies.
type splitPayload struct{ head, body, tail []byte }

func (s splitPayload) Size() int { return len(s.head) + len(s.body) + len(s.tail) }
func (s splitPayload) MarshalTo(dst []byte) (int, error) {
	return copy(dst, bytes.Join([][]byte{s.head, s.body, s.tail}, nil)), nil
}
func (s splitPayload) Split() (head, body, tail []byte) { return s.head, s.body, s.tail }

// A large SplitPayload is written in parts, from where its body lies,
// among frames copied whole; every frame reads back as appended, with the
// CRC a reopen checks, and a body changed after Append is not in the file.
func TestSplitPayloadsAreFramedAsTheirEncoding(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, 1<<20)
	var in []Payload
	var want [][]byte
	for i, size := range []int{10, splitBytes, 100, splitBytes - 1, 3 * splitBytes, 0, 70000, 1} {
		body := bytes.Repeat([]byte{byte(i + 1)}, size)
		p := splitPayload{head: []byte{byte(i), 0xAA}, body: body, tail: []byte{0x7f}}
		in = append(in, p)
		want = append(want, bytes.Join([][]byte{p.head, p.body, p.tail}, nil))
	}
	locs, err := l.Append(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Settle(locs[0].File)
	for _, p := range in {
		clear(p.(splitPayload).body)
	}
	mustRead(t, l, locs, want)
	l.Close()
	l = mustOpen(t, dir, 1<<20)
	mustRead(t, l, locs, want)
	more := payloads(50, 3, 9000)
	mustRead(t, l, mustAppend(t, l, more), more)
}
