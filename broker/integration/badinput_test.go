package integration

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/raftka/raftka/broker/brokertest"
)

func TestBadInputGetsErrorsNotCrashes(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1})
	small := "1024"
	c.CreateTopic("strict", 1, 1, map[string]*string{"max.message.bytes": &small})
	cl := c.Client()

	good := produceRaw(t, cl, "strict", 0, -1, batch(-1, 0, 0, "kept"))
	if good.ErrorCode != 0 {
		t.Fatalf("good batch: %v", kerr.ErrorForCode(good.ErrorCode))
	}

	corrupt := batch(-1, 0, 0, "flipped")
	corrupt[len(corrupt)-2] ^= 0xff
	if p := produceRaw(t, cl, "strict", 0, -1, corrupt); p.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("bad CRC: %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := produceRaw(t, cl, "strict", 0, -1, batch(-1, 0, 0, strings.Repeat("x", 4096))); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("oversized batch: %v, want MESSAGE_TOO_LARGE", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := produceRaw(t, cl, "strict", 0, -1, []byte{1, 2, 3}); p.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("truncated batch: %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(p.ErrorCode))
	}
	// By id (Produce v13, which franz-go negotiates here) an unknown topic
	// is an unknown id.
	if p := produceRaw(t, cl, "no-such-topic", 0, -1, batch(-1, 0, 0, "x")); p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(p.ErrorCode))
	}
	byName := c.Client(kgo.MaxVersions(kversion.V3_6_0())) // Produce v9: topics by name
	if p := produceRaw(t, byName, "no-such-topic", 0, -1, batch(-1, 0, 0, "x")); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic by name: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := produceRaw(t, cl, "strict", 9, -1, batch(-1, 0, 0, "x")); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(p.ErrorCode))
	}

	// Garbage on the wire closes that connection only.
	for _, frame := range [][]byte{
		{0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff}, // too short for a header
		{0x7f, 0xff, 0xff, 0xff},             // 2 GiB announced
		append([]byte{0, 0, 0, 12, 0, 0, 0, 9, 0, 0, 0, 1}, 0xff, 0xff, 0xff, 0xff), // Produce v9 with a broken body
		{0, 0, 0, 10, 0, 99, 0, 0, 0, 0, 0, 1, 0, 0},                                // unknown API key
	} {
		conn, err := net.Dial("tcp", c.Brokers[0].KafkaAddr)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(frame); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(conn); err != nil && !isReset(err) {
			t.Fatalf("frame %x: want the connection closed, got %v", frame, err)
		}
		conn.Close()
	}
	// An ApiVersions request of a future version is answered in v0 with
	// UNSUPPORTED_VERSION, so the client can retry with one we know (KIP-511).
	conn, err := net.Dial("tcp", c.Brokers[0].KafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte{0, 0, 0, 10, 0, 18, 0, 99, 0, 0, 0, 7, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	readResponse(t, conn, 7, resp)
	conn.Close()
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
		t.Fatalf("future ApiVersions: %+v", resp)
	}

	// The broker is still up and the good record is still there.
	got := consumeAll(t, c, "strict", 1)
	if string(got[0].Value) != "kept" {
		t.Fatalf("stored %q, want kept", got[0].Value)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Client(kgo.RequiredAcks(kgo.AllISRAcks())).ProduceSync(ctx, &kgo.Record{Topic: "strict", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after bad input: %v", err)
	}
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}
