package partition

import (
	"hash/crc32"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A consumer held inside a batch gets the batch cut at the hold, with a
// valid CRC and a last offset a client steps to the hold from; EachKey
// reads the keys a leader classifies, compressed batches included.
func TestRecordsBeforeCutsTheBatchThatSpansTheHold(t *testing.T) {
	first := keyedBatch(t, kgo.NoCompression(), 1, -1, 0, kv{"a", val("1")}, kv{"b", val("2")}, kv{"c", val("3")})
	second := keyedBatch(t, kgo.Lz4Compression(), 1, -1, 0, kv{"d", val("4")}, kv{"e", val("5")}, kv{"f", val("6")})
	patchBatch(second, 3, 0)
	log := append(append([]byte{}, first...), second...)

	keys := func(b []byte) []string {
		var out []string
		if _, err := EachKey(b, func(offset int64, key []byte) { out = append(out, string(key)+"@"+string(rune('0'+offset))) }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := keys(log), []string{"a@0", "b@1", "c@2", "d@3", "e@4", "f@5"}; !slices.Equal(got, want) {
		t.Fatalf("keys = %v, want %v", got, want)
	}
	if next, _ := EachKey(log, func(int64, []byte) {}); next != 6 {
		t.Fatalf("EachKey read up to %d, want 6", next)
	}
	for _, tc := range []struct {
		hold int64
		want []string
	}{{0, nil}, {2, []string{"a@0", "b@1"}}, {3, []string{"a@0", "b@1", "c@2"}}, {5, []string{"a@0", "b@1", "c@2", "d@3", "e@4"}}, {9, []string{"a@0", "b@1", "c@2", "d@3", "e@4", "f@5"}}} {
		held := RecordsBefore(log, tc.hold)
		if got := keys(held); !slices.Equal(got, tc.want) {
			t.Fatalf("before %d: %v, want %v", tc.hold, got, tc.want)
		}
		for len(held) > 0 {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(held); err != nil {
				t.Fatal(err)
			}
			n := int(b.Length) + 12
			if crc := int32(crc32.Checksum(held[21:n], crc32.MakeTable(crc32.Castagnoli))); crc != b.CRC {
				t.Fatalf("before %d: batch at %d has a bad CRC", tc.hold, b.FirstOffset)
			}
			if last := b.FirstOffset + int64(b.LastOffsetDelta); last >= tc.hold {
				t.Fatalf("before %d: batch at %d ends at %d, past the hold", tc.hold, b.FirstOffset, last)
			}
			held = held[n:]
		}
	}
}
