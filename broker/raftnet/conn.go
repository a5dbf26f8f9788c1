package raftnet

import (
	"io"
	"net"
	"time"

	pb "github.com/lni/dragonboat/v3/raftpb"
)

const (
	// frameWriteTimeout bounds a write, so that a peer that stopped reading
	// fails the connection (Dragonboat dials again) instead of holding the
	// sending goroutine.
	frameWriteTimeout = 5 * time.Second
	// deadlineSlack is how stale a write deadline may get before it is
	// moved: a busy connection moves it about once a second, not once per
	// frame.
	deadlineSlack = time.Second
	// poisonAckTimeout bounds the wait for the peer's answer to the end of a
	// snapshot stream.
	poisonAckTimeout = 10 * time.Second
)

// frameWriter writes whole frames, each with one write.
type frameWriter struct {
	conn     net.Conn
	checked  bool
	buf      []byte // reused between frames up to reuseBytes
	deadline time.Time
}

// marshaler is what raftpb's MessageBatch and Chunk offer.
type marshaler interface {
	MarshalTo([]byte) (int, error)
}

func (w *frameWriter) write(method uint16, m marshaler, sizeLimit int) error {
	buf := w.buf
	if cap(buf) < frameBytes+sizeLimit {
		buf = make([]byte, frameBytes+sizeLimit)
		if cap(buf) <= reuseBytes {
			w.buf = buf
		}
	}
	buf = buf[:frameBytes+sizeLimit]
	n, err := m.MarshalTo(buf[frameBytes:])
	if err != nil {
		return err
	}
	putFrameHeader(buf, method, buf[frameBytes:frameBytes+n], w.checked)
	if now := time.Now(); w.deadline.Sub(now) < frameWriteTimeout-deadlineSlack {
		w.deadline = now.Add(frameWriteTimeout)
		if err := w.conn.SetWriteDeadline(w.deadline); err != nil {
			return err
		}
	}
	_, err = w.conn.Write(buf[:frameBytes+n])
	return err
}

// messageConn sends Raft message batches to one peer (raftio.IConnection).
type messageConn struct{ frameWriter }

func (c *messageConn) SendMessageBatch(batch pb.MessageBatch) error {
	return c.write(methodMessageBatch, &batch, batch.SizeUpperLimit())
}

func (c *messageConn) Close() { _ = c.conn.Close() }

// chunkConn sends one snapshot's chunks to a peer
// (raftio.ISnapshotConnection).
type chunkConn struct{ frameWriter }

func (c *chunkConn) SendChunk(chunk pb.Chunk) error {
	return c.write(methodChunk, &chunk, chunk.Size())
}

// Close ends the stream and waits for the peer's answer, so that the last
// chunk is read before the connection goes.
func (c *chunkConn) Close() {
	defer func() { _ = c.conn.Close() }()
	if err := c.conn.SetDeadline(time.Now().Add(poisonAckTimeout)); err != nil {
		return
	}
	if _, err := c.conn.Write(poison[:]); err != nil {
		return
	}
	var ack [magicBytes]byte
	_, _ = io.ReadFull(c.conn, ack[:])
}
