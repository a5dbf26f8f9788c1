package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CodecProducer is the compression.type that keeps each batch as its
// producer compressed it.
const CodecProducer kgo.CompressionCodecType = -1

// TopicCodec is the codec a topic's compression.type names: CodecProducer
// for "producer", kgo.CodecNone for "uncompressed".
func TopicCodec(compressionType string) (kgo.CompressionCodecType, bool) {
	switch compressionType {
	case "producer":
		return CodecProducer, true
	case "uncompressed":
		return kgo.CodecNone, true
	case "gzip":
		return kgo.CodecGzip, true
	case "snappy":
		return kgo.CodecSnappy, true
	case "lz4":
		return kgo.CodecLz4, true
	case "zstd":
		return kgo.CodecZstd, true
	}
	return 0, false
}

// compressors holds one franz-go compressor per codec: each pools its
// encoders, so building one per batch would throw the pools away.
var compressors sync.Map // kgo.CompressionCodecType -> kgo.Compressor

func compressorFor(codec kgo.CompressionCodecType) (kgo.Compressor, error) {
	if c, ok := compressors.Load(codec); ok {
		return c.(kgo.Compressor), nil
	}
	c, err := kgo.DefaultCompressor(codecOf(codec))
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("partition: no compressor for codec %d", codec)
	}
	actual, _ := compressors.LoadOrStore(codec, c)
	return actual.(kgo.Compressor), nil
}

// compressRecords compresses a batch's encoded records with codec.
func compressRecords(records []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	if codec == kgo.CodecNone {
		return records, nil
	}
	comp, err := compressorFor(codec)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	out, used := comp.Compress(&buf, records)
	if used != codec {
		return nil, fmt.Errorf("partition: compressing with codec %d gave %d", codec, used)
	}
	return append([]byte(nil), out...), nil
}

// Recompress gives a produce request's records (split into batches) the
// topic's codec, as Kafka's broker does when a topic's compression.type is
// not "producer": a batch in another codec is decompressed and compressed
// again, keeping its header (offsets, timestamps, producer id, epoch and
// sequence) but for the codec bits, length and CRC. It runs on the leader
// before the batch is proposed, so every replica stores the same bytes.
// Records are returned unchanged when no batch needs it. A batch that
// decompresses past the bound or grows past maxMessage is MESSAGE_TOO_LARGE.
func Recompress(records []byte, batches [][]byte, codec kgo.CompressionCodecType, maxMessage int32) ([]byte, error) {
	if codec == CodecProducer {
		return records, nil
	}
	needed := false
	for _, raw := range batches {
		needed = needed || kgo.CompressionCodecType(binary.BigEndian.Uint16(raw[offAttributes:])&0x07) != codec
	}
	if !needed {
		return records, nil
	}
	decompressing <- struct{}{}
	defer func() { <-decompressing }()
	dec := batchDecompressor()
	out := make([]byte, 0, len(records))
	for _, raw := range batches {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			return nil, kerr.CorruptMessage
		}
		from := kgo.CompressionCodecType(b.Attributes & 0x07)
		if from == codec {
			out = append(out, raw...)
			continue
		}
		plain, err := dec.Decompress(b.Records, from)
		if err != nil {
			return nil, decompressError(err)
		}
		if b.Records, err = compressRecords(plain, codec); err != nil {
			return nil, err
		}
		b.Attributes = b.Attributes&^0x07 | int16(codec)
		b.Length = int32(len(b.AppendTo(nil)) - 12)
		if b.Length+12 > maxMessage {
			return nil, kerr.MessageTooLarge
		}
		at := len(out)
		out = b.AppendTo(out)
		binary.BigEndian.PutUint32(out[at+offCRC:], crc32.Checksum(out[at+offAttributes:], crc32c))
	}
	return out, nil
}

// decompressError is the Kafka error for a batch that did not decompress.
func decompressError(err error) error {
	if errors.Is(err, kgo.ErrMaxDecompress) {
		return kerr.MessageTooLarge
	}
	return kerr.CorruptMessage
}
