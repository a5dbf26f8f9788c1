package server

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestFrame encodes a request as a client sends it, without the size.
func requestFrame(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 42)
	b = binary.BigEndian.AppendUint16(b, 6)
	b = append(b, "fuzzer"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// FuzzParseRequest checks that no byte sequence makes request decoding
// panic; handle closes the connection on any error it returns.
func FuzzParseRequest(f *testing.F) {
	for key, h := range handlers {
		for _, v := range []int16{h.min, h.max} {
			req := kmsg.RequestForKey(key)
			if d, ok := req.(interface{ Default() }); ok {
				d.Default()
			}
			f.Add(requestFrame(req, v))
		}
	}
	produce := kmsg.NewPtrProduceRequest()
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "orders"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49, 255, 255, 255, 255, 2}
	t.Partitions = append(t.Partitions, p)
	produce.Topics = append(produce.Topics, t)
	f.Add(requestFrame(produce, 9))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseRequest(body)
		if err == nil && (p.kreq == nil || p.kreq.Key() != p.key) {
			t.Fatalf("parsed without a request: %+v", p)
		}
	})
}

func TestParseRequestRoundTrip(t *testing.T) {
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	for _, v := range []int16{1, 8, 9, 12} {
		p, err := parseRequest(requestFrame(md, v))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		got := p.kreq.(*kmsg.MetadataRequest)
		if p.corr != 42 || p.clientID != "fuzzer" || len(got.Topics) != 1 || *got.Topics[0].Topic != "orders" {
			t.Fatalf("v%d: parsed %+v", v, p)
		}
	}
	if _, err := parseRequest(requestFrame(md, 13)); err == nil {
		t.Fatal("Metadata v13 accepted, but the dispatch table stops at v12")
	}
}
