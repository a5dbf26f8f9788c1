package raftlog

import (
	"encoding/binary"
	"fmt"
	"sort"

	pb "github.com/lni/dragonboat/v3/raftpb"

	"github.com/raftka/raftka/broker/frames"
)

type nodeKey struct{ shard, node uint64 }

// loc is where one marshaled entry lies: [off, off+size) in file, which
// is the store's own file, or, with framedFile set, a file of the group's
// frame log.
type loc struct {
	file uint32
	size uint32
	off  int64
}

// framedFile marks a loc in a frame log: the store's files are numbered
// far below it.
const framedFile = 1 << 31

func framedLoc(l frames.Loc) loc {
	return loc{file: l.File | framedFile, off: l.Off, size: l.Size}
}

func (l loc) framed() bool { return l.file&framedFile != 0 }

func (l loc) frame() frames.Loc {
	return frames.Loc{File: l.file &^ framedFile, Off: l.off, Size: l.size}
}

// nodeLog is what the store knows of one Raft node. Its fields follow
// Dragonboat's own log store: maxIndex is the index of the last entry
// saved (or of a snapshot saved after it), entries past it do not count.
type nodeLog struct {
	bootstrap []byte // marshaled pb.Bootstrap; nil when none was saved
	state     pb.State
	hasState  bool
	maxIndex  uint64
	hasMax    bool
	snapshots []pb.Snapshot // ascending by index
	first     uint64        // index of locs[0]
	locs      []loc
}

func (n *nodeLog) last() uint64 { return n.first + uint64(len(n.locs)) - 1 }

func (n *nodeLog) has(index uint64) bool {
	return len(n.locs) > 0 && index >= n.first && index <= n.last()
}

// putEntries records entries first.. at locs; as in Raft, they replace
// every entry from first on.
func (n *nodeLog) putEntries(first uint64, locs []loc) {
	if len(n.locs) == 0 || first < n.first || first > n.last()+1 {
		n.first = first
		n.locs = append([]loc(nil), locs...)
	} else {
		n.locs = append(n.locs[:first-n.first], locs...)
	}
	n.maxIndex, n.hasMax = first+uint64(len(locs))-1, true
}

// truncateAfter forgets entries past index.
func (n *nodeLog) truncateAfter(index uint64) {
	switch {
	case len(n.locs) == 0 || index >= n.last():
	case index < n.first:
		n.locs = nil
	default:
		n.locs = n.locs[:index-n.first+1]
	}
}

// removeBefore forgets entries below index, as Dragonboat's store removes
// the key range [0, index).
func (n *nodeLog) removeBefore(index uint64) {
	switch {
	case len(n.locs) == 0 || index <= n.first:
	case index > n.last():
		n.locs = nil
	default:
		n.locs = n.locs[index-n.first:]
		n.first = index
		if cap(n.locs) > 2*len(n.locs)+64 {
			n.locs = append([]loc(nil), n.locs...) // let the dropped front go
		}
	}
}

// firstFrameFile is the lowest frame file a live entry of n lies in;
// entries go to files in order, so it is the first framed entry's.
func (n *nodeLog) firstFrameFile() uint32 {
	for _, l := range n.locs {
		if l.framed() {
			return l.frame().File
		}
	}
	return frames.NoFile
}

func (n *nodeLog) addSnapshot(ss pb.Snapshot) {
	i := sort.Search(len(n.snapshots), func(i int) bool { return n.snapshots[i].Index >= ss.Index })
	if i < len(n.snapshots) && n.snapshots[i].Index == ss.Index {
		n.snapshots[i] = ss
		return
	}
	n.snapshots = append(n.snapshots, pb.Snapshot{})
	copy(n.snapshots[i+1:], n.snapshots[i:])
	n.snapshots[i] = ss
}

func (n *nodeLog) deleteSnapshot(index uint64) {
	for i, ss := range n.snapshots {
		if ss.Index == index {
			n.snapshots = append(n.snapshots[:i], n.snapshots[i+1:]...)
			return
		}
	}
}

// rangeFrom is Dragonboat's ReadRaftState range: the first entry at or
// after snapshotIndex and how many entries follow up to maxIndex.
func (n *nodeLog) rangeFrom(snapshotIndex uint64) (first, count uint64, err error) {
	if !n.hasMax || snapshotIndex == n.maxIndex {
		return snapshotIndex, 0, nil
	}
	first = max(snapshotIndex, n.first)
	if !n.has(first) || first > n.maxIndex {
		return 0, 0, fmt.Errorf("raftlog: no entry between the snapshot at %d and the last index %d", snapshotIndex, n.maxIndex)
	}
	return first, n.maxIndex - first + 1, nil
}

// index is the whole in-memory state; records change it only through
// apply, on the write path and on replay alike, so a reopened store is the
// one that was written.
type index map[nodeKey]*nodeLog

func (x index) get(k nodeKey) *nodeLog {
	n := x[k]
	if n == nil {
		n = &nodeLog{}
		x[k] = n
	}
	return n
}

// apply applies one record's payload, found at payloadOff in file.
// update is one node's part of an updates record.
type update struct {
	node        nodeKey
	state       pb.State
	hasState    bool
	snapshot    pb.Snapshot
	hasSnapshot bool
	first       uint64
	locs        []loc // of entries first..; none when the update saves none
	// copies are the entries' bytes, in the payload, of an update whose
	// frames were not fsynced with its record (entriesCopied).
	copies [][]byte
}

// eachUpdate decodes the updates of a kindUpdates, kindUpdatesFramed or
// kindUpdatesCopied record payload (d past the kind byte) at payloadOff in
// file, calling fn for each whole one; a malformed one sets d.err and
// ends it.
func eachUpdate(d *decoder, kind byte, file uint32, payloadOff int64, fn func(update)) {
	for count := d.uvarint(); count > 0 && d.err == nil; count-- {
		u := update{node: d.node()}
		u.state, u.hasState = d.state()
		u.snapshot, u.hasSnapshot = d.snapshot()
		entries := d.uvarint()
		if entries > 0 && d.err == nil {
			u.first = d.uvarint()
			u.locs = make([]loc, 0, min(entries, 1<<16))
			mode := entriesInline
			if kind == kindUpdatesFramed || kind == kindUpdatesCopied {
				mode = d.byte()
			}
			if mode > entriesCopied || mode == entriesCopied && kind != kindUpdatesCopied {
				d.err = errCorrupt
			}
			if mode != entriesInline {
				for i := uint64(0); i < entries && d.err == nil; i++ {
					no, off, size := d.uvarint(), d.uvarint(), d.uvarint()
					if no == 0 || no >= framedFile || size > 1<<32-1 {
						d.err = errCorrupt
						break
					}
					u.locs = append(u.locs, framedLoc(frames.Loc{File: uint32(no), Off: int64(off), Size: uint32(size)}))
				}
			}
			if mode == entriesCopied {
				u.copies = make([][]byte, 0, len(u.locs))
				for i := 0; i < len(u.locs) && d.err == nil; i++ {
					b, _ := d.bytes()
					if len(b) != int(u.locs[i].size) {
						d.err = errCorrupt
					}
					u.copies = append(u.copies, b)
				}
			}
			for i := uint64(len(u.locs)); i < entries && d.err == nil; i++ {
				b, at := d.bytes()
				u.locs = append(u.locs, loc{file: file, off: payloadOff + int64(at), size: uint32(len(b))})
			}
		}
		if d.err == nil {
			fn(u)
		}
	}
}

func (x index) apply(payload []byte, file uint32, payloadOff int64) error {
	d := &decoder{buf: payload, pos: 1}
	switch payload[0] {
	case kindUpdates, kindUpdatesFramed, kindUpdatesCopied:
		eachUpdate(d, payload[0], file, payloadOff, func(u update) {
			n := x.get(u.node)
			if u.hasState {
				n.state, n.hasState = u.state, true
			}
			if u.hasSnapshot {
				n.addSnapshot(u.snapshot)
				n.truncateAfter(u.snapshot.Index)
				n.maxIndex, n.hasMax = u.snapshot.Index, true
			}
			if len(u.locs) > 0 {
				n.putEntries(u.first, u.locs)
			}
		})
	case kindBootstrap:
		k := d.node()
		b, _ := d.bytes()
		if d.err == nil {
			x.get(k).bootstrap = append([]byte(nil), b...)
		}
	case kindSnapshots:
		for count := d.uvarint(); count > 0 && d.err == nil; count-- {
			k := d.node()
			if ss, ok := d.snapshot(); ok {
				x.get(k).addSnapshot(ss)
			}
		}
	case kindDeleteSnapshot:
		k, at := d.node(), d.uvarint()
		if n := x[k]; n != nil && d.err == nil {
			n.deleteSnapshot(at)
		}
	case kindRemoveNode:
		k := d.node()
		if d.err == nil {
			delete(x, k)
		}
	case kindNodeImage:
		k, n := decodeNode(d)
		if d.err == nil {
			x[k] = n
		}
	case kindCheckpoint:
		fresh := index{}
		for count := d.uvarint(); count > 0 && d.err == nil; count-- {
			k, n := decodeNode(d)
			fresh[k] = n
		}
		if d.err == nil {
			clear(x)
			for k, n := range fresh {
				x[k] = n
			}
		}
	case kindRelocated, kindFileHeader:
	default:
		return fmt.Errorf("raftlog: unknown record kind %d", payload[0])
	}
	return d.err
}

// appendNodeImage encodes everything known of one node.
func appendNodeImage(buf []byte, k nodeKey, n *nodeLog) []byte {
	buf = appendNode(buf, k)
	buf = appendBytes(buf, n.bootstrap)
	var st []byte
	if n.hasState {
		st = marshalState(n.state)
	}
	buf = appendBytes(buf, st)
	if n.hasMax {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	buf = binary.AppendUvarint(buf, n.maxIndex)
	buf = binary.AppendUvarint(buf, uint64(len(n.snapshots)))
	for _, ss := range n.snapshots {
		buf = appendBytes(buf, marshalSnapshot(ss))
	}
	buf = binary.AppendUvarint(buf, n.first)
	buf = binary.AppendUvarint(buf, uint64(len(n.locs)))
	for _, l := range n.locs {
		buf = binary.AppendUvarint(buf, uint64(l.file))
		buf = binary.AppendUvarint(buf, uint64(l.off))
		buf = binary.AppendUvarint(buf, uint64(l.size))
	}
	return buf
}

func decodeNode(d *decoder) (nodeKey, *nodeLog) {
	k := d.node()
	n := &nodeLog{}
	if b, _ := d.bytes(); len(b) > 0 {
		n.bootstrap = append([]byte(nil), b...)
	}
	n.state, n.hasState = d.state()
	n.hasMax = d.byte() == 1
	n.maxIndex = d.uvarint()
	for count := d.uvarint(); count > 0 && d.err == nil; count-- {
		if ss, ok := d.snapshot(); ok {
			n.snapshots = append(n.snapshots, ss)
		}
	}
	n.first = d.uvarint()
	count := d.uvarint()
	if d.err == nil && count > uint64(len(d.buf)) {
		d.err = errCorrupt
	}
	if d.err == nil && count > 0 {
		n.locs = make([]loc, count)
		for i := range n.locs {
			n.locs[i] = loc{file: uint32(d.uvarint()), off: int64(d.uvarint()), size: uint32(d.uvarint())}
		}
	}
	return k, n
}
