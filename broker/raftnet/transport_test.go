package raftnet

import (
	"bytes"
	"context"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/lni/dragonboat/v3/config"
	pb "github.com/lni/dragonboat/v3/raftpb"
)

// localAddr returns a free address on 127.0.0.1.
func localAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// receiver is a started transport whose frames go to channels.
type receiver struct {
	addr    string
	batches chan pb.MessageBatch
	chunks  chan pb.Chunk
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{addr: localAddr(t), batches: make(chan pb.MessageBatch, 1024), chunks: make(chan pb.Chunk, 64)}
	tr := Factory{}.Create(config.NodeHostConfig{RaftAddress: r.addr},
		func(b pb.MessageBatch) { r.batches <- b },
		func(c pb.Chunk) bool { r.chunks <- c; return true })
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return r
}

func (r *receiver) nextBatch(t *testing.T) pb.MessageBatch {
	t.Helper()
	select {
	case b := <-r.batches:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no message batch arrived")
		return pb.MessageBatch{}
	}
}

func sender(t *testing.T) *Transport {
	t.Helper()
	return Factory{}.Create(config.NodeHostConfig{RaftAddress: localAddr(t)}, nil, nil).(*Transport)
}

func batchOf(commands ...[]byte) pb.MessageBatch {
	m := pb.Message{Type: pb.Replicate, ClusterId: 7, From: 1, To: 2, Term: 3, LogIndex: 10}
	for i, c := range commands {
		m.Entries = append(m.Entries, pb.Entry{Term: 3, Index: uint64(11 + i), Cmd: c})
	}
	return pb.MessageBatch{SourceAddress: "127.0.0.1:1", BinVer: 210, Requests: []pb.Message{m}}
}

func TestBatchesArriveWholeAndInOrder(t *testing.T) {
	r := startReceiver(t)
	conn, err := sender(t).GetConnection(context.Background(), r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	huge := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: more than the read buffer
	var sent []pb.MessageBatch
	for i := range 200 {
		cmd := []byte{byte(i), byte(i >> 8)}
		if i%50 == 7 {
			cmd = append(cmd, huge...)
		}
		b := batchOf(cmd, []byte("second"))
		sent = append(sent, b)
		if err := conn.SendMessageBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range sent {
		got := r.nextBatch(t)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %d arrived different from how it was sent", i)
		}
	}
}

func TestSnapshotChunksArriveAndTheStreamEndsWithAnAnswer(t *testing.T) {
	r := startReceiver(t)
	conn, err := sender(t).GetSnapshotConnection(context.Background(), r.addr)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0xA5}, 2<<20)
	for i := range uint64(3) {
		if err := conn.SendChunk(pb.Chunk{ClusterId: 7, NodeId: 2, ChunkId: i, ChunkCount: 3, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	for i := range uint64(3) {
		select {
		case c := <-r.chunks:
			if c.ChunkId != i || !bytes.Equal(c.Data, data) {
				t.Fatalf("chunk %d arrived as chunk %d of %d bytes", i, c.ChunkId, len(c.Data))
			}
		default:
			t.Fatalf("chunk %d had not arrived when the stream's end was answered", i)
		}
	}

	// The answer to the end of a stream, as a peer running Dragonboat's
	// transport waits for it.
	raw, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write(poison[:]); err != nil {
		t.Fatal(err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := io.ReadAll(raw)
	if err != nil || !bytes.Equal(answer, poison[:]) {
		t.Fatalf("end of stream answered with %x, %v; want %x then the connection closed", answer, err, poison)
	}
}

// frame returns a well-formed frame around payload.
func frame(method uint16, payload []byte) []byte {
	buf := make([]byte, frameBytes+len(payload))
	copy(buf[frameBytes:], payload)
	putFrameHeader(buf, method, buf[frameBytes:], true)
	return buf
}

func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	r := startReceiver(t)
	good := batchOf([]byte("good"))
	payload, err := good.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	corrupt := func(at int) []byte { f := frame(methodMessageBatch, payload); f[at] ^= 0x40; return f }
	tooLarge := frame(methodMessageBatch, payload)
	putHeader(tooLarge[magicBytes:frameBytes], methodMessageBatch, MaxPayloadBytes+1, 0) // its own CRC is valid

	for name, bad := range map[string][]byte{
		"magic number":      corrupt(0),
		"header checksum":   corrupt(magicBytes + 5),
		"payload checksum":  corrupt(frameBytes + 3),
		"unknown method":    frame(300, payload),
		"size over the cap": tooLarge,
		"not a batch":       frame(methodMessageBatch, bytes.Repeat([]byte{0xFF}, 64)),
	} {
		raw, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		// A good frame first, so the connection is known to be served.
		if _, err := raw.Write(append(frame(methodMessageBatch, payload), bad...)); err != nil {
			t.Fatal(err)
		}
		_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := raw.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: the connection read %d bytes, %v; want it closed", name, n, err)
		}
		raw.Close()
		if got := r.nextBatch(t); got.Requests[0].Entries[0].Cmd == nil {
			t.Fatalf("%s: the good frame before it did not arrive", name)
		}
		select {
		case b := <-r.batches:
			t.Fatalf("%s: a batch arrived from the bad frame: %+v", name, b)
		default:
		}
	}

	conn, err := sender(t).GetConnection(context.Background(), r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SendMessageBatch(good); err != nil {
		t.Fatal(err)
	}
	if got := r.nextBatch(t); string(got.Requests[0].Entries[0].Cmd) != "good" {
		t.Fatalf("after the bad frames the transport delivered %q", got.Requests[0].Entries[0].Cmd)
	}
}

// shortStalls makes a stall mid-frame fail the connection after 200 ms.
func shortStalls(t *testing.T) {
	old := stallTimeout
	stallTimeout = 200 * time.Millisecond
	t.Cleanup(func() { stallTimeout = old })
}

func TestPeerStalledMidFrameIsDisconnected(t *testing.T) {
	shortStalls(t)
	r := startReceiver(t)
	raw, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	b := batchOf([]byte("x"))
	payload, _ := b.Marshal()
	if _, err := raw.Write(frame(methodMessageBatch, payload)[:frameBytes+3]); err != nil {
		t.Fatal(err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := raw.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection stalled mid-frame read %d bytes, %v; want it closed by the broker", n, err)
	}
}

func TestSlowLargeFrameArrives(t *testing.T) {
	shortStalls(t)
	r := startReceiver(t)
	raw, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	want := batchOf(bytes.Repeat([]byte{7}, 6<<20)) // above reuseBytes too
	payload, _ := want.Marshal()
	f := frame(methodMessageBatch, payload)
	// Ten pieces, 100 ms apart: the frame takes longer than a stall may.
	for piece := range 10 {
		if _, err := raw.Write(f[len(f)*piece/10 : len(f)*(piece+1)/10]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := r.nextBatch(t); !reflect.DeepEqual(got, want) {
		t.Fatal("a large frame sent slowly arrived different from how it was sent")
	}
}
