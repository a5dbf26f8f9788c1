package partition

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var codecNames = map[string]kgo.CompressionCodec{"uncompressed": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}

// plainRecords is a batch's records as they are before compression.
func plainRecords(t *testing.T, raw []byte) (kmsg.RecordBatch, []byte) {
	t.Helper()
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	plain, err := batchDecompressor().Decompress(b.Records, kgo.CompressionCodecType(b.Attributes&0x07))
	if err != nil {
		t.Fatal(err)
	}
	return b, plain
}

// Every codec to every codec: the batch comes out in the topic's codec
// with its header and its records' bytes as they were, and a valid CRC.
func TestRecompressGivesTheTopicCodec(t *testing.T) {
	for fromName, from := range codecNames {
		for toName := range codecNames {
			t.Run(fromName+" to "+toName, func(t *testing.T) {
				to, ok := TopicCodec(toName)
				if !ok {
					t.Fatalf("no codec for %q", toName)
				}
				first := keyedBatch(t, from, 1700000000000, 42, 7, kv{"k1", val(strings.Repeat("v", 300))}, kv{"k2", nil}, kv{"k3", val("x")})
				second := keyedBatch(t, kgo.NoCompression(), 1700000000500, 42, 10, kv{"k4", val("y")})
				records := append(append([]byte(nil), first...), second...)
				out, err := Recompress(records, [][]byte{first, second}, to, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				batches, err := SplitBatches(out, 1<<20) // checks each CRC
				if err != nil || len(batches) != 2 {
					t.Fatalf("%d batches: %v", len(batches), err)
				}
				for i, src := range [][]byte{first, second} {
					wantHeader, wantPlain := plainRecords(t, src)
					gotHeader, gotPlain := plainRecords(t, batches[i])
					if codec := kgo.CompressionCodecType(gotHeader.Attributes & 0x07); codec != to {
						t.Fatalf("batch %d in codec %d, want %d", i, codec, to)
					}
					if !bytes.Equal(gotPlain, wantPlain) {
						t.Fatalf("batch %d: records changed", i)
					}
					gotHeader.Attributes &^= 0x07
					wantHeader.Attributes &^= 0x07
					gotHeader.Records, wantHeader.Records = nil, nil
					gotHeader.Length, wantHeader.Length, gotHeader.CRC, wantHeader.CRC = 0, 0, 0, 0
					if !reflect.DeepEqual(gotHeader, wantHeader) {
						t.Fatalf("batch %d header %+v, want %+v", i, gotHeader, wantHeader)
					}
				}
			})
		}
	}
}

func TestRecompressLeavesBatchesInTheTopicCodecAlone(t *testing.T) {
	batch := keyedBatch(t, kgo.ZstdCompression(), 1, -1, 0, kv{"k", val("v")})
	for _, codec := range []kgo.CompressionCodecType{CodecProducer, kgo.CodecZstd} {
		out, err := Recompress(batch, [][]byte{batch}, codec, 1<<20)
		if err != nil || &out[0] != &batch[0] {
			t.Fatalf("codec %d: not the request's own bytes (%v)", codec, err)
		}
	}
}

// A batch that grows past max.message.bytes once decompressed is refused,
// as Kafka refuses it, and so is one that decompresses past the bound.
func TestRecompressRefusesWhatGrowsTooLarge(t *testing.T) {
	batch := keyedBatch(t, kgo.ZstdCompression(), 1, -1, 0, kv{"k", val(strings.Repeat("0", 100<<10))})
	if _, err := Recompress(batch, [][]byte{batch}, kgo.CodecNone, 10<<10); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("uncompressing 100 KiB under a 10 KiB limit: %v", err)
	}
	bomb := keyedBatch(t, kgo.ZstdCompression(), 1, -1, 0, kv{"k", val(strings.Repeat("0", maxDecompressedBatchBytes+1))})
	if _, err := Recompress(bomb, [][]byte{bomb}, kgo.CodecGzip, 1<<30); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("decompressing past the bound: %v", err)
	}
}
