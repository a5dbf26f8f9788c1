package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// A connection's answers go out in request order, but an answer that is
// ready must not wait for a later request's: here a produce is followed,
// on the same connection, by a fetch that long-polls an empty partition.
// The produce's answer must arrive while the fetch still waits; the fetch
// is then answered when a record arrives.
func TestAnswerIsNotHeldBehindALaterRequest(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	c.CreateTopic("answered", 1, 1, nil)
	c.CreateTopic("quiet", 1, 1, nil)
	// Leadership settles first, so that the produce below is answered at
	// once rather than with NOT_LEADER.
	produceRaw(t, c.Client(), "answered", 0, -1, batch(-1, 0, 0, "first"))

	conn, err := net.Dial("tcp", c.Brokers[0].KafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	produce := produceV9("answered", batch(-1, 0, 0, "second"))

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12 // topics by name
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 60000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "quiet"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("pipelining"))
	// One write, so that the broker has both before it answers either.
	// AppendRequest sizes the whole buffer it is given: one frame each.
	frames := append(f.AppendRequest(nil, produce, 1), f.AppendRequest(nil, fetch, 2)...)
	if _, err := conn.Write(frames); err != nil {
		t.Fatal(err)
	}

	// The fetch waits up to a minute; the produce's answer comes long
	// before that, or it was held behind the fetch.
	if err := conn.SetReadDeadline(time.Now().Add(15 * time.Second)); err != nil {
		t.Fatal(err)
	}
	produced := kmsg.NewPtrProduceResponse()
	produced.Version = produce.Version
	readResponse(t, conn, 1, produced)
	if p := produced.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("produce answered error %d at offset %d, want offset 1", p.ErrorCode, p.BaseOffset)
	}

	// Only now does the fetched partition get a record, which answers
	// the fetch.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Client(kgo.RequiredAcks(kgo.AllISRAcks())).ProduceSync(ctx, &kgo.Record{Topic: "quiet", Value: []byte("wake")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	fetched := kmsg.NewPtrFetchResponse()
	fetched.Version = fetch.Version
	readResponse(t, conn, 2, fetched)
	if p := fetched.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch answered error %d, high watermark %d, %d bytes of records; want the record", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
}

// Produce requests written back to back on one connection, in one write,
// are appended in the order they were sent and answered in that order.
func TestPipelinedProducesKeepTheirOrder(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("ordered", 1, 3, nil)
	cl := brokerClient(context.Background(), t, c)
	// Leadership settles first, so that no request below is refused.
	produceRaw(t, cl, "ordered", 0, -1, batch(-1, 0, 0, "first"))
	leader := c.Brokers[c.LeaderOf("ordered", 0)]

	conn, err := net.Dial("tcp", leader.KafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const requests = 40
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("pipelining"))
	var frames []byte
	for i := range requests {
		// Batches of different sizes, so that the requests are not all
		// as quick to read and to commit.
		records := batch(-1, 0, 0, fmt.Sprintf("%d-%s", i, strings.Repeat("x", (i%4)*20000)))
		frames = append(frames, f.AppendRequest(nil, produceV9("ordered", records), int32(i))...)
	}
	if _, err := conn.Write(frames); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for i := range requests {
		produced := kmsg.NewPtrProduceResponse()
		produced.Version = 9
		readResponse(t, conn, int32(i), produced)
		if p := produced.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != int64(i+1) {
			t.Fatalf("request %d answered error %d at offset %d, want offset %d", i, p.ErrorCode, p.BaseOffset, i+1)
		}
	}
	for i, r := range consumeAll(t, c, "ordered", requests+1)[1:] {
		if want := fmt.Sprintf("%d-", i); !strings.HasPrefix(string(r.Value), want) {
			t.Fatalf("record at offset %d is %.10q, want request %d's", r.Offset, r.Value, i)
		}
	}
}

// produceV9 is an acks=all Produce request of records to partition 0 of
// topic in v9, which names topics by name: for a connection of the test's
// own, where no client chooses the version.
func produceV9(topic string, records []byte) *kmsg.ProduceRequest {
	req := produceRequest(topic, [16]byte{}, 0, -1, records)
	req.Version = 9
	return req
}

// readResponse reads one response frame from conn into resp, whose
// version is set, and checks its correlation id.
func readResponse(t *testing.T, conn net.Conn, correlation int32, resp kmsg.Response) {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("response %d: %v", correlation, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatalf("response %d: %v", correlation, err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != correlation {
		t.Fatalf("response to request %d, want %d", got, correlation)
	}
	body = body[4:]
	if resp.IsFlexible() {
		body = body[1:] // the header's empty tag section
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("response %d: %v", correlation, err)
	}
}
