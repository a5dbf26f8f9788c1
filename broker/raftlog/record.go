package raftlog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	pb "github.com/lni/dragonboat/v3/raftpb"
)

// A record is a 4-byte payload length, a 4-byte CRC-32C of the payload
// masked with its file's number (fileMask), and the payload, whose first
// byte is its kind.
const recordHeader = 8

// fileMask is what a record's CRC is xored with in file no. Emptied files
// are written over rather than deleted (see Store.spares), and a record
// left from a file's earlier life fails its check in the next one: file
// numbers never repeat and the multiplication by an odd constant is a
// bijection, so two files never share a mask. File 0 does not exist, and
// mask 0 is what files written before masks have (legacy files, read but
// never written over).
func fileMask(no uint32) uint32 { return no * 0x9E3779B1 }

const (
	kindUpdates        byte = 1 // SaveRaftState: states, snapshots, entries
	kindBootstrap      byte = 2
	kindSnapshots      byte = 3 // SaveSnapshots
	kindDeleteSnapshot byte = 4
	kindRemoveNode     byte = 5
	kindNodeImage      byte = 6 // ImportSnapshot: one node replaced whole
	kindCheckpoint     byte = 7 // every node, at the start of a file
	kindRelocated      byte = 8 // entries copied forward; the checkpoint after them points here
	kindFileHeader     byte = 9 // first in a file with masked CRCs, so a peek tells it can be reused
	// kindUpdatesFramed is kindUpdates where each update's entries are
	// either inline or named by their frame locations (OpenFramed).
	kindUpdatesFramed byte = 10
	// kindUpdatesCopied is kindUpdatesFramed whose updates may also be
	// entriesCopied; a kind of its own, so that a broker too old to know
	// copies refuses the file rather than misreading it.
	kindUpdatesCopied byte = 11
)

// How a kindUpdatesFramed or kindUpdatesCopied record holds one update's
// entries: in the record, named by their frame locations, or both, named
// by locations whose frames were not fsynced and copied into the record
// (see SetCopyBytes).
const (
	entriesInline byte = 0
	entriesFramed byte = 1
	entriesCopied byte = 2
)

// fileFormat is in every file header: 2 is masked CRCs (legacy files
// have no header).
const fileFormat = 2

func fileHeaderRecord() []byte {
	return seal(binary.AppendUvarint(newRecord(kindFileHeader, 1), fileFormat))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errCorrupt = errors.New("raftlog: corrupt record")

// newRecord starts a record of the given kind, leaving room for the header.
func newRecord(kind byte, sizeHint int) []byte {
	buf := make([]byte, recordHeader, recordHeader+1+sizeHint)
	return append(buf, kind)
}

// seal fills in the header once the payload is complete, with the CRC
// unmasked: walFile.append masks it for the file it goes into.
func seal(rec []byte) []byte {
	payload := rec[recordHeader:]
	binary.BigEndian.PutUint32(rec[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(rec[4:8], crc32.Checksum(payload, castagnoli))
	return rec
}

func appendBytes(buf, b []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

func appendNode(buf []byte, k nodeKey) []byte {
	buf = binary.AppendUvarint(buf, k.shard)
	return binary.AppendUvarint(buf, k.node)
}

// marshalState is empty for an empty state: "no change".
func marshalState(st pb.State) []byte {
	if pb.IsEmptyState(st) {
		return nil
	}
	b, err := st.Marshal()
	if err != nil {
		panic(err) // a fixed-size message of integers
	}
	return b
}

func marshalSnapshot(ss pb.Snapshot) []byte {
	if pb.IsEmptySnapshot(ss) {
		return nil
	}
	b, err := ss.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}

// decoder reads a payload; the first malformed field sets err and every
// later read returns zero values.
type decoder struct {
	buf []byte
	pos int
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil || d.pos >= len(d.buf) {
		d.err = errCorrupt
		return 0
	}
	d.pos++
	return d.buf[d.pos-1]
}

// bytes returns the next length-prefixed field and its offset in buf.
func (d *decoder) bytes() ([]byte, int) {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.buf)-d.pos) {
		d.err = errCorrupt
		return nil, 0
	}
	at := d.pos
	d.pos += int(n)
	return d.buf[at:d.pos], at
}

func (d *decoder) node() nodeKey {
	return nodeKey{shard: d.uvarint(), node: d.uvarint()}
}

// message reads the next length-prefixed protobuf into m; an empty field
// means none (an empty state or snapshot is written as nothing).
func (d *decoder) message(m interface{ Unmarshal([]byte) error }) bool {
	b, _ := d.bytes()
	if len(b) == 0 || d.err != nil {
		return false
	}
	if err := m.Unmarshal(b); err != nil {
		d.err = errCorrupt
	}
	return d.err == nil
}

func (d *decoder) state() (st pb.State, ok bool) {
	ok = d.message(&st)
	return st, ok
}

func (d *decoder) snapshot() (ss pb.Snapshot, ok bool) {
	ok = d.message(&ss)
	return ss, ok
}
