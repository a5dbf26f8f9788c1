package main

import (
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSequencesFindGapsAndDuplicates(t *testing.T) {
	type batch struct {
		producer      string
		epoch         int16
		first, count  int64
		offset        int64
		want, details string
	}
	cases := []struct {
		name    string
		space   sequenceSpace
		batches []batch
		atEnd   string // the gap finish reports, for numbered records
	}{
		{"contiguous from where the read starts", batchSequences, []batch{
			{"7", 0, 40, 3, 100, "", ""}, {"7", 0, 43, 1, 103, "", ""}, {"8", 0, 0, 2, 104, "", ""}, {"7", 0, 44, 5, 106, "", ""},
		}, ""},
		{"a lost batch", batchSequences, []batch{
			{"7", 0, 0, 3, 0, "", ""}, {"7", 0, 6, 2, 3, problemSequenceGap, "sequences 3 to 5 missing between offsets 2 and 3"},
			{"7", 0, 8, 1, 5, "", ""},
		}, ""},
		{"a retry written twice", batchSequences, []batch{
			{"7", 0, 0, 3, 0, "", ""}, {"7", 0, 3, 2, 3, "", ""}, {"7", 0, 3, 2, 5, problemDuplicate, "sequences 3 to 4 again (first written at offset 3)"},
			{"7", 0, 5, 1, 7, "", ""},
		}, ""},
		{"a partial overlap repeats only its head", batchSequences, []batch{
			{"7", 0, 0, 4, 0, "", ""}, {"7", 0, 2, 4, 4, problemDuplicate, "sequences 2 to 3 again (first written earlier)"}, {"7", 0, 6, 1, 8, "", ""},
		}, ""},
		{"a new epoch starts afresh, an old one is fenced", batchSequences, []batch{
			{"7", 0, 0, 5, 0, "", ""}, {"7", 1, 0, 1, 5, "", ""}, {"7", 0, 5, 1, 6, problemStaleEpoch, "epoch 0 written after epoch 1"}, {"7", 1, 1, 1, 7, "", ""},
		}, ""},
		{"batch sequences wrap", batchSequences, []batch{
			{"7", 0, math.MaxInt32 - 1, 2, 0, "", ""}, {"7", 0, 0, 2, 2, "", ""}, {"7", 0, 3, 1, 4, problemSequenceGap, "sequences 2 to 2 missing between offsets 3 and 4"},
		}, ""},
		{"numbered records", numberedSequences, []batch{
			{"p", 0, 0, 1, 0, "", ""}, {"p", 0, 1, 1, 1, "", ""}, {"p", 0, 1, 1, 2, problemDuplicate, "sequences 1 to 1 again (first written at offset 1)"},
			{"p", 0, 5, 1, 3, "", ""},
		}, "sequences 2 to 4 missing between offsets 2 and 3"},
	}
	for _, c := range cases {
		s := newSequences(3, c.space)
		for i, b := range c.batches {
			got := s.observe(b.producer, b.epoch, b.first, b.count, b.offset)
			switch {
			case b.want == "" && got != nil:
				t.Errorf("%s: batch %d: unexpected %+v", c.name, i, got)
			case b.want != "" && (got == nil || got.Kind != b.want || got.Detail != b.details || got.Offset != b.offset || got.Partition != 3):
				t.Errorf("%s: batch %d: got %+v, want %s %q", c.name, i, got, b.want, b.details)
			}
		}
		var atEnd string
		for _, p := range s.finish() {
			atEnd += p.Detail
		}
		if atEnd != c.atEnd {
			t.Errorf("%s: finish reported %q, want %q", c.name, atEnd, c.atEnd)
		}
	}
}

// Numbered records: a late start of a partition read from offset 0 is a
// loss; a number written after a higher one is a reorder, not a gap and a
// duplicate; a repeat names where the number was first written.
func TestNumberedSequencesStartReorderAndFirstCopy(t *testing.T) {
	type rec struct {
		seq, offset int64
		want        string // problem kind, "" for none
		detail      string
	}
	cases := []struct {
		name     string
		fromZero bool
		recs     []rec
		atEnd    []string // details finish reports
	}{
		{"a late start from offset 0", true, []rec{{3, 0, "", ""}, {4, 1, "", ""}, {5, 2, "", ""}, {7, 3, "", ""}},
			[]string{"sequences 0 to 2 missing before offset 0 (the partition holds every offset from 0, and numbers start at 0)", "sequences 6 to 6 missing between offsets 2 and 3"}},
		{"a late start past the log start", false, []rec{{3, 10, "", ""}, {4, 11, "", ""}}, nil},
		{"a reorder", true, []rec{{0, 0, "", ""}, {1, 1, "", ""}, {3, 2, "", ""}, {2, 3, problemReorder, "sequence 2 at offset 3, after sequence 3 at offset 2"}, {4, 4, "", ""}}, nil},
		{"a reorder inside a longer gap", true, []rec{{0, 0, "", ""}, {4, 1, "", ""}, {2, 2, problemReorder, "sequence 2 at offset 2, after sequence 4 at offset 1"}},
			[]string{"sequences 1 to 1 missing between offsets 0 and 1", "sequences 3 to 3 missing between offsets 0 and 1"}},
		{"three copies", true, []rec{{0, 0, "", ""}, {0, 1, problemDuplicate, "sequences 0 to 0 again (first written at offset 0)"},
			{0, 2, problemDuplicate, "sequences 0 to 0 again (first written at offset 0)"}}, nil},
	}
	for _, c := range cases {
		s := newSequences(1, numberedSequences)
		s.fromZero = c.fromZero
		for i, r := range c.recs {
			got := s.observe("p", 0, r.seq, 1, r.offset)
			switch {
			case r.want == "" && got != nil:
				t.Errorf("%s: record %d: unexpected %+v", c.name, i, got)
			case r.want != "" && (got == nil || got.Kind != r.want || got.Detail != r.detail || got.Offset != r.offset):
				t.Errorf("%s: record %d: got %+v, want %s %q", c.name, i, got, r.want, r.detail)
			}
		}
		var details []string
		for _, p := range s.finish() {
			if p.Kind != problemSequenceGap {
				t.Errorf("%s: finish reported %+v", c.name, p)
			}
			details = append(details, p.Detail)
		}
		if !slices.Equal(details, c.atEnd) {
			t.Errorf("%s: finish reported %q, want %q", c.name, details, c.atEnd)
		}
	}
}

// Numbered records of a key go where Kafka's clients put that key:
// murmur2's hash made positive (& 0x7fffffff), modulo the partitions. The
// hashes are Kafka's murmur2 test vectors ("21" -973932308, "foobar"
// -790332482, ...), here modulo 100.
func TestNumberingPlacesKeysAsKafka(t *testing.T) {
	n := newNumbering("p", 100)
	for key, want := range map[string]int32{"21": 40, "foobar": 66, "a-little-bit-long-string": 12, "a-little-bit-longer-string": 19, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": 77} {
		r := &kgo.Record{Key: []byte(key)}
		n.stamp(r)
		if r.Partition != want {
			t.Errorf("key %q placed in partition %d, want %d", key, r.Partition, want)
		}
	}
}
