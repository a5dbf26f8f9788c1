package frames

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/raftka/raftka/broker/internal/durable"
)

const (
	frameHeader = 8
	suffix      = ".frames"
	// DefaultFileBytes is the size past which a new file is started.
	DefaultFileBytes = 128 << 20
	// writebackBytes is how much an active file grows before the kernel
	// is asked to write it out. Most frames are fsynced late or never by
	// their own save (a small save's frames are copied into its Raft log
	// record and left to a later fsync), so without it a burst of small
	// writes leaves hundreds of megabytes dirty for the kernel to write
	// 30 s later, where they delay every fsync of a heavier load then:
	// the disk is busy with the burst, and a flush waits for the writes
	// queued before it.
	writebackBytes = 1 << 20
	pageBytes      = 4096
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrMissing is returned for a location outside the files this log has.
var ErrMissing = errors.New("frames: no such frame")

// Loc is where one frame's payload lies.
type Loc struct {
	File uint32
	Off  int64 // of the payload, past the frame header
	Size uint32
}

// mark is what one user of the files said last (see release).
type mark struct {
	below uint32 // it needs no file numbered below
	none  bool   // it needed none of the frames appended before
	at    uint64 // Append calls when it said so
}

type file struct {
	no    uint32
	f     *os.File
	size  int64
	dirty bool
	// written is the offset up to which the kernel was asked to write
	// the file's pages out (writebackBytes).
	written int64

	refs    int  // readers reading it, or a writeback being asked for; guarded by the log's mu
	retired bool // deleted: closed once the last reader is done
}

// Log is one partition's frame files in a directory of their own.
type Log struct {
	dir       string
	fileBytes atomic.Int64

	mu       sync.Mutex
	files    []*file // ascending by number; the last is the active one
	appended uint64  // Append calls so far
	// A file goes once both of its users are done with it: Raft (its
	// entries compacted) and the partition's log (no segment points into
	// it). Each says below which file number it needs nothing; 0 until it
	// has said, so a log just opened keeps everything.
	raft, data mark
	next       uint32 // at least the number of the next new file
	// unsettled counts, per file, Append calls whose caller has not yet
	// recorded where their frames are (Settle): no mark can speak for
	// those frames, so their file stays.
	unsettled map[uint32]int

	syncing sync.Mutex // one fdatasync round at a time
	synced  uint64     // Append calls durable, guarded by syncing
}

func fileName(no uint32) string { return fmt.Sprintf("%010d%s", no, suffix) }

// Open opens the frame files in dir, creating dir if needed. fileBytes 0
// is DefaultFileBytes.
func Open(dir string, fileBytes int64) (*Log, error) {
	if fileBytes <= 0 {
		fileBytes = DefaultFileBytes
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, unsettled: map[uint32]int{}}
	l.fileBytes.Store(fileBytes)
	var nos []uint32
	for _, de := range names {
		base, ok := strings.CutSuffix(de.Name(), suffix)
		if !ok {
			continue
		}
		no, err := strconv.ParseUint(base, 10, 32)
		if err != nil || no == 0 {
			continue
		}
		nos = append(nos, uint32(no))
	}
	slices.Sort(nos)
	for _, no := range nos {
		f, err := os.OpenFile(filepath.Join(dir, fileName(no)), os.O_RDWR, 0)
		if err != nil {
			l.Close()
			return nil, err
		}
		end, err := validEnd(f)
		if err == nil {
			// What follows the first torn frame was never made durable,
			// so no record names it; cut it off so that appends continue
			// a clean run.
			err = f.Truncate(end)
		}
		if err != nil {
			_ = f.Close()
			l.Close()
			return nil, err
		}
		l.files = append(l.files, &file{no: no, f: f, size: end})
	}
	return l, nil
}

// validEnd is where the frames of f end: at its first torn frame.
func validEnd(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var hdr [frameHeader]byte
	var payload []byte
	var off int64
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return off, nil
		}
		size := int64(binary.BigEndian.Uint32(hdr[:4]))
		if size == 0 || size > st.Size()-off-frameHeader {
			return off, nil
		}
		payload = slices.Grow(payload[:0], int(size))[:size]
		if _, err := io.ReadFull(r, payload); err != nil {
			return off, nil
		}
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
			return off, nil
		}
		off += frameHeader + size
	}
}

// SetFileBytes sets the size past which a new file is started (the
// partition's segment.bytes: files go whole, so their size is what disk
// use exceeds retention by); 0 is DefaultFileBytes.
func (l *Log) SetFileBytes(n int64) {
	if n <= 0 {
		n = DefaultFileBytes
	}
	l.fileBytes.Store(n)
}

// A Payload is what one frame holds. A marshaled Raft entry encodes
// itself straight into the frame's place, so a produced batch is copied
// once on its way to the disk.
type Payload interface {
	Size() int
	MarshalTo(dst []byte) (int, error)
}

// A SplitPayload is a Payload whose encoding is mostly one byte slice it
// holds (a Raft entry's command): Append writes that slice to the file
// from where it lies, between the encoding's head and tail, instead of
// copying it into the frame first. head+body+tail must be exactly what
// MarshalTo writes.
type SplitPayload interface {
	Payload
	Split() (head, body, tail []byte)
}

// splitBytes is the smallest SplitPayload whose body Append writes from
// where it lies: a smaller one costs less to copy than a buffer of its own
// in the write.
const splitBytes = 4 << 10

// Bytes is a Payload already encoded.
type Bytes []byte

// Size implements Payload.
func (b Bytes) Size() int { return len(b) }

// MarshalTo implements Payload.
func (b Bytes) MarshalTo(dst []byte) (int, error) { return copy(dst, b), nil }

// Append writes one frame per payload at the end of the active file,
// starting a new file when it is full, and returns their locations. The
// frames are durable once Sync returns. They are encoded before the lock
// is taken: readers wait only for the write. A large SplitPayload's body
// is written from where it lies, in the same write (durable.WriteAtv).
func (l *Log) Append(payloads []Payload) ([]Loc, error) {
	// Each frame's size, and its parts when its body is written from
	// where it lies.
	type frame struct {
		size             int
		head, body, tail []byte
	}
	framed := make([]frame, len(payloads))
	copied := 0
	for i, p := range payloads {
		f := &framed[i]
		f.size = p.Size()
		copied += frameHeader + f.size
		if sp, ok := p.(SplitPayload); ok && f.size >= splitBytes {
			f.head, f.body, f.tail = sp.Split()
			if n := len(f.head) + len(f.body) + len(f.tail); n != f.size {
				return nil, fmt.Errorf("frames: payload %d split into %d bytes of %d", i, n, f.size)
			}
			copied -= len(f.body)
		}
	}
	// buf holds everything but the split bodies, in file order; bufs is
	// the write: runs of buf between the bodies.
	buf := make([]byte, copied)
	var bufs [][]byte
	locs := make([]Loc, len(payloads)) // in the write, until the file is known
	at, runStart, size := 0, 0, 0
	for i, p := range payloads {
		f := framed[i]
		binary.BigEndian.PutUint32(buf[at:], uint32(f.size))
		crcAt := at + 4
		at += frameHeader
		locs[i] = Loc{Off: int64(size + frameHeader), Size: uint32(f.size)}
		size += frameHeader + f.size
		var crc uint32
		if f.body != nil {
			at += copy(buf[at:], f.head)
			bufs = append(bufs, buf[runStart:at], f.body)
			runStart = at
			at += copy(buf[at:], f.tail)
			crc = crc32.Update(crc32.Update(crc32.Checksum(f.head, castagnoli), castagnoli, f.body), castagnoli, f.tail)
		} else {
			payload := buf[at : at+f.size]
			if m, err := p.MarshalTo(payload); err != nil || m != f.size {
				return nil, fmt.Errorf("frames: payload %d encoded %d of %d bytes: %v", i, m, f.size, err)
			}
			at += f.size
			crc = crc32.Checksum(payload, castagnoli)
		}
		binary.BigEndian.PutUint32(buf[crcAt:], crc)
	}
	bufs = append(bufs, buf[runStart:at])
	l.mu.Lock()
	w, err := l.activeLocked()
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	if err := durable.WriteAtv(w.f, bufs, w.size); err != nil {
		// Leave no partial frame behind for the next append to follow.
		_ = w.f.Truncate(w.size)
		l.mu.Unlock()
		return nil, err
	}
	for i := range locs {
		locs[i].File, locs[i].Off = w.no, w.size+locs[i].Off
	}
	w.size += int64(size)
	w.dirty = true
	l.appended++
	l.unsettled[w.no]++
	// Whole pages only: the last one is still being written.
	from, to := w.written, w.size&^(pageBytes-1)
	write := to-from >= writebackBytes
	if write {
		w.written = to
		w.refs++ // the file stays open until the request is made
	}
	l.mu.Unlock()
	if write {
		durable.StartWriteback(w.f, from, to-from)
		l.done(w)
	}
	return locs, nil
}

// nextFileLocked is the number the next new file gets: numbers are never
// used twice while the log is open, nor across opens while files remain.
func (l *Log) nextFileLocked() uint32 {
	if n := len(l.files); n > 0 {
		return max(l.files[n-1].no+1, l.next)
	}
	return max(1, l.next)
}

// activeNoLocked is the active file's number, or the next file's if none.
func (l *Log) activeNoLocked() uint32 {
	if n := len(l.files); n > 0 {
		return l.files[n-1].no
	}
	return l.nextFileLocked()
}

// activeLocked is the file to append to: the last, unless it is full.
func (l *Log) activeLocked() (*file, error) {
	if n := len(l.files); n > 0 && l.files[n-1].size < l.fileBytes.Load() {
		return l.files[n-1], nil
	}
	return l.newFileLocked()
}

// newFileLocked starts a new active file.
func (l *Log) newFileLocked() (*file, error) {
	no := l.nextFileLocked()
	l.next = no + 1
	f, err := os.OpenFile(filepath.Join(l.dir, fileName(no)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := durable.SyncDir(l.dir); err != nil {
		_ = f.Close()
		return nil, err
	}
	w := &file{no: no, f: f}
	l.files = append(l.files, w)
	return w, nil
}

// Sync makes every frame appended before it was called durable: also
// those of a file that filled up since. Concurrent calls share rounds.
func (l *Log) Sync() error {
	l.mu.Lock()
	target := l.appended
	l.mu.Unlock()
	l.syncing.Lock()
	defer l.syncing.Unlock()
	if l.synced >= target {
		return nil
	}
	l.mu.Lock()
	upTo := l.appended
	var dirty []*file
	for _, w := range l.files {
		if w.dirty {
			dirty = append(dirty, w)
			w.dirty = false // appends from here on are for a later round
		}
	}
	l.mu.Unlock()
	for i, w := range dirty {
		if err := durable.Fdatasync(w.f); err != nil {
			l.mu.Lock()
			for _, w := range dirty[i:] {
				w.dirty = true
			}
			l.mu.Unlock()
			return err
		}
	}
	l.synced = upTo
	return nil
}

// ReadAt reads len(p) bytes of file no at off, all of which must lie in
// frames already appended.
func (l *Log) ReadAt(no uint32, p []byte, off int64) error {
	l.mu.Lock()
	w := l.fileLocked(no)
	if w == nil || off < 0 || off+int64(len(p)) > w.size {
		l.mu.Unlock()
		return fmt.Errorf("%w: file %d at %d (%d bytes) in %s", ErrMissing, no, off, len(p), l.dir)
	}
	w.refs++
	l.mu.Unlock()
	_, err := w.f.ReadAt(p, off)
	l.done(w)
	return err
}

// done drops a reference to w taken under mu, closing it if it was
// retired meanwhile and this was the last.
func (l *Log) done(w *file) {
	l.mu.Lock()
	w.refs--
	closeNow := w.retired && w.refs == 0
	l.mu.Unlock()
	if closeNow {
		_ = w.f.Close()
	}
}

// Read returns the payload at loc.
func (l *Log) Read(loc Loc) ([]byte, error) {
	if loc.Off < frameHeader {
		return nil, fmt.Errorf("%w: file %d at %d in %s", ErrMissing, loc.File, loc.Off, l.dir)
	}
	buf := make([]byte, loc.Size)
	if err := l.ReadAt(loc.File, buf, loc.Off); err != nil {
		return nil, err
	}
	return buf, nil
}

// Settle says that the frames an Append put in file no are now where the
// caller keeps track of them (in its index), or were given up: until then
// their file stays, whatever the marks say.
func (l *Log) Settle(no uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unsettled[no]--; l.unsettled[no] <= 0 {
		delete(l.unsettled, no)
	}
}

// HoldData says that the partition's log now points into file no, which
// stays until a ReleaseData says otherwise: a segment can come to point
// into a file below the partition's last mark (the batch was saved before
// that mark and applied after it).
func (l *Log) HoldData(no uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.data.below, l.data.none = min(l.data.below, no), false
}

// ReleaseRaft says that Raft needs no frame in a file numbered below
// below any more.
func (l *Log) ReleaseRaft(below uint32) { l.release(&l.raft, below) }

// ReleaseData says that the partition's log points into no file numbered
// below below any more.
func (l *Log) ReleaseData(below uint32) { l.release(&l.data, below) }

// NoFile is what a user that needs none of the files releases below: all
// but the active one, and none appended to later.
const NoFile = ^uint32(0)

func (l *Log) release(m *mark, below uint32) {
	l.mu.Lock()
	// Frames appended from now on go to the active file or later ones,
	// which a mark from before them must not release.
	*m = mark{below: min(below, l.activeNoLocked()), none: below == NoFile, at: l.appended}
	if l.raft.none && l.data.none && l.raft.at == l.appended && l.data.at == l.appended && len(l.unsettled) == 0 &&
		len(l.files) > 0 && l.files[len(l.files)-1].size > 0 {
		// Neither needs any frame there is: the active file goes too (a
		// quiet partition whose records expired keeps none on disk).
		// An empty file takes its place, which keeps file numbers
		// rising across restarts.
		if _, err := l.newFileLocked(); err == nil {
			l.raft.below, l.data.below = l.activeNoLocked(), l.activeNoLocked()
		}
	}
	limit := min(l.raft.below, l.data.below)
	var gone, idle []*file
	for len(l.files) > 1 && l.files[0].no < limit && l.unsettled[l.files[0].no] == 0 {
		w := l.files[0]
		l.files = l.files[1:]
		w.retired = true
		gone = append(gone, w)
		if w.refs == 0 {
			idle = append(idle, w) // else its last reader closes it
		}
	}
	l.mu.Unlock()
	for _, w := range idle {
		_ = w.f.Close()
	}
	for _, w := range gone {
		// A file left behind is one that no record or segment names;
		// the next release after a restart takes it.
		_ = os.Remove(filepath.Join(l.dir, fileName(w.no)))
	}
}

// Files reports how many frame files the log has and their bytes.
func (l *Log) Files() (count int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.files {
		bytes += w.size
	}
	return len(l.files), bytes
}

func (l *Log) fileLocked(no uint32) *file {
	i, ok := slices.BinarySearchFunc(l.files, no, func(w *file, no uint32) int { return int(w.no) - int(no) })
	if !ok {
		return nil
	}
	return l.files[i]
}

// Close closes the files.
func (l *Log) Close() {
	// Frames the Raft log store copied into its records rather than
	// fsyncing are left for a later fsync that, once closed, only this one
	// can make; the store's copies cover a crash before it.
	_ = l.Sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.files {
		_ = w.f.Close()
	}
	l.files = nil
}

// Durable reports whether the frame at loc in the frame log of dir is on
// disk whole, as Open will find it, before that log is opened: its length
// and CRC check out. A file that is not there counts as durable: a file
// is made durable in its directory before any frame goes in (Append), so
// one that is gone was emptied and released since, once nothing named its
// frames. The Raft log store asks this of the frames its records name,
// since it fsyncs a record and the frames it names side by side.
func Durable(dir string, loc Loc) (bool, error) {
	f, err := os.Open(filepath.Join(dir, fileName(loc.File)))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	return whole(f, loc)
}

// whole reports whether the frame at loc is in f whole.
func whole(f *os.File, loc Loc) (bool, error) {
	if loc.Off < frameHeader {
		return false, nil
	}
	buf := make([]byte, frameHeader+int(loc.Size))
	if n, err := f.ReadAt(buf, loc.Off-frameHeader); n < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	payload := buf[frameHeader:]
	return binary.BigEndian.Uint32(buf[:4]) == loc.Size && crc32.Checksum(payload, castagnoli) == binary.BigEndian.Uint32(buf[4:8]), nil
}

// Repairer writes frames again from copies, before their logs are opened.
// The Raft log store keeps a copy of the frames it did not fsync in the
// record that names them, and repairs them from it after a crash: the
// frame goes back where the record says, so what the record and the
// partition's segments point at is whole again. It keeps each frame file
// it looked at open until Close: a replay checks every copied frame, and
// an open per frame would cost the broker's start-up.
type Repairer struct {
	files map[string]*os.File // nil for a file that is not there
}

// Repair writes the frame at loc in the frame log of dir from payload if
// it is not on disk whole, and makes it durable. A file that is not there
// is left so (see Durable). It reports whether it wrote.
func (r *Repairer) Repair(dir string, loc Loc, payload []byte) (bool, error) {
	if len(payload) != int(loc.Size) || loc.Off < frameHeader {
		return false, fmt.Errorf("frames: repair of %d bytes at %+v", len(payload), loc)
	}
	path := filepath.Join(dir, fileName(loc.File))
	f, seen := r.files[path]
	if !seen {
		var err error
		f, err = os.OpenFile(path, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			f, err = nil, nil
		}
		if err != nil {
			return false, err
		}
		if r.files == nil {
			r.files = map[string]*os.File{}
		}
		r.files[path] = f
	}
	if f == nil {
		return false, nil
	}
	if ok, err := whole(f, loc); err != nil || ok {
		return false, err
	}
	buf := make([]byte, frameHeader+len(payload))
	binary.BigEndian.PutUint32(buf, loc.Size)
	binary.BigEndian.PutUint32(buf[4:], crc32.Checksum(payload, castagnoli))
	copy(buf[frameHeader:], payload)
	if _, err := f.WriteAt(buf, loc.Off-frameHeader); err != nil {
		return false, err
	}
	return true, durable.Fdatasync(f)
}

// Close closes the files the repairer kept open.
func (r *Repairer) Close() {
	for _, f := range r.files {
		if f != nil {
			_ = f.Close()
		}
	}
	r.files = nil
}
