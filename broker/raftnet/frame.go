package raftnet

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"
)

// MaxPayloadBytes bounds a frame's payload, so that a corrupt or hostile
// size cannot make a broker allocate without limit. Dragonboat sends at
// most 64 MiB of messages in a batch (one message above it goes alone, and
// its entries are bounded by the same 64 MiB) and snapshots in 2 MiB chunks;
// a Kafka batch is far smaller.
const MaxPayloadBytes = 256 << 20

const (
	magicBytes  = 2
	headerBytes = 18
	frameBytes  = magicBytes + headerBytes

	methodMessageBatch uint16 = 100
	methodChunk        uint16 = 200
)

var (
	magic  = [magicBytes]byte{0xAE, 0x7D}
	poison = [magicBytes]byte{0, 0}

	errPoison   = errors.New("raftnet: end of snapshot stream")
	errBadFrame = errors.New("raftnet: bad frame")
)

// putFrameHeader writes the magic number and header for payload into
// buf[:frameBytes]. checked says whether the payload's CRC goes in the
// header (not under TLS, as Dragonboat's transport has it).
func putFrameHeader(buf []byte, method uint16, payload []byte, checked bool) {
	var sum uint32
	if checked {
		sum = crc32.ChecksumIEEE(payload)
	}
	copy(buf, magic[:])
	putHeader(buf[magicBytes:frameBytes], method, uint64(len(payload)), sum)
}

// putHeader writes a header whose own CRC is taken with that field zeroed.
func putHeader(h []byte, method uint16, size uint64, payloadSum uint32) {
	binary.BigEndian.PutUint16(h[0:], method)
	binary.BigEndian.PutUint64(h[2:], size)
	binary.BigEndian.PutUint32(h[10:], 0)
	binary.BigEndian.PutUint32(h[14:], payloadSum)
	binary.BigEndian.PutUint32(h[10:], crc32.ChecksumIEEE(h))
}

// frameReader reads frames from one connection through a buffer, so that
// a frame that arrived whole costs one read.
type frameReader struct {
	r       *bufio.Reader
	stall   *stallGuard
	checked bool
	payload []byte // reused between frames up to reuseBytes
}

// reuseBytes is the largest payload buffer a connection keeps between
// frames: a snapshot chunk fits, a rare huge batch is allocated for itself.
const reuseBytes = 4 << 20

// stallTimeout bounds the wait for more of a frame once it began, so that a
// peer that stalls mid-frame does not hold the connection; it is renewed
// with each read that makes progress, so a large frame on a slow link is
// not cut off. Between frames a connection waits without a deadline (TCP
// keep-alive finds a peer that is gone). A variable for the tests.
var stallTimeout = 5 * time.Second

func newFrameReader(conn net.Conn, checked bool) *frameReader {
	stall := &stallGuard{conn: conn}
	return &frameReader{r: bufio.NewReaderSize(stall, 64<<10), stall: stall, checked: checked}
}

// stallGuard sits under the buffer and sets a read deadline before each
// read that a frame in progress needs: a frame that arrived whole, the
// usual case, sets none.
type stallGuard struct {
	conn     net.Conn
	inFrame  bool
	deadline bool // a read deadline is set on conn
}

func (g *stallGuard) Read(p []byte) (int, error) {
	if g.inFrame {
		g.deadline = true
		if err := g.conn.SetReadDeadline(time.Now().Add(stallTimeout)); err != nil {
			return 0, err
		}
	}
	return g.conn.Read(p)
}

// between marks the end of a frame: the wait for the next has no deadline.
func (g *stallGuard) between() error {
	g.inFrame = false
	if !g.deadline {
		return nil
	}
	g.deadline = false
	return g.conn.SetReadDeadline(time.Time{})
}

// next reads one frame and returns its method and payload; the payload is
// valid until the next call. It returns errPoison for the end of a snapshot
// stream, and an error wrapping errBadFrame for bytes that are not a frame.
func (f *frameReader) next() (uint16, []byte, error) {
	var head [frameBytes]byte
	if _, err := io.ReadFull(f.r, head[:magicBytes]); err != nil {
		return 0, nil, err
	}
	switch [magicBytes]byte(head[:magicBytes]) {
	case magic:
	case poison:
		return 0, nil, errPoison
	default:
		return 0, nil, fmt.Errorf("%w: magic number %x", errBadFrame, head[:magicBytes])
	}
	f.stall.inFrame = true
	if _, err := io.ReadFull(f.r, head[magicBytes:]); err != nil {
		return 0, nil, err
	}
	h := head[magicBytes:]
	headerSum := binary.BigEndian.Uint32(h[10:])
	binary.BigEndian.PutUint32(h[10:], 0)
	if crc32.ChecksumIEEE(h) != headerSum {
		return 0, nil, fmt.Errorf("%w: header checksum", errBadFrame)
	}
	method := binary.BigEndian.Uint16(h[0:])
	if method != methodMessageBatch && method != methodChunk {
		return 0, nil, fmt.Errorf("%w: method %d", errBadFrame, method)
	}
	size := binary.BigEndian.Uint64(h[2:])
	if size == 0 || size > MaxPayloadBytes {
		return 0, nil, fmt.Errorf("%w: payload of %d bytes", errBadFrame, size)
	}
	payload, err := f.readPayload(size)
	if err != nil {
		return 0, nil, err
	}
	if f.checked && crc32.ChecksumIEEE(payload) != binary.BigEndian.Uint32(h[14:]) {
		return 0, nil, fmt.Errorf("%w: payload checksum", errBadFrame)
	}
	if err := f.stall.between(); err != nil {
		return 0, nil, err
	}
	return method, payload, nil
}

// readPayload reads size bytes into the reused buffer, or, above
// reuseBytes, into one that grows as the bytes arrive: a size in a header
// costs no memory until the peer sends that much.
func (f *frameReader) readPayload(size uint64) ([]byte, error) {
	if size > reuseBytes {
		var b bytes.Buffer
		b.Grow(reuseBytes)
		if _, err := io.CopyN(&b, f.r, int64(size)); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	if uint64(cap(f.payload)) < size {
		f.payload = make([]byte, size)
	}
	payload := f.payload[:size]
	if _, err := io.ReadFull(f.r, payload); err != nil {
		return nil, err
	}
	return payload, nil
}
