package main

import (
	"math"
	"testing"
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
	}{
		{"contiguous from where the read starts", batchSequences, []batch{
			{"7", 0, 40, 3, 100, "", ""}, {"7", 0, 43, 1, 103, "", ""}, {"8", 0, 0, 2, 104, "", ""}, {"7", 0, 44, 5, 106, "", ""},
		}},
		{"a lost batch", batchSequences, []batch{
			{"7", 0, 0, 3, 0, "", ""}, {"7", 0, 6, 2, 3, problemSequenceGap, "sequences 3 to 5 missing between offsets 2 and 3"},
			{"7", 0, 8, 1, 5, "", ""},
		}},
		{"a retry written twice", batchSequences, []batch{
			{"7", 0, 0, 3, 0, "", ""}, {"7", 0, 3, 2, 3, "", ""}, {"7", 0, 3, 2, 5, problemDuplicate, "sequences 3 to 4 again (first written at offset 3)"},
			{"7", 0, 5, 1, 7, "", ""},
		}},
		{"a partial overlap repeats only its head", batchSequences, []batch{
			{"7", 0, 0, 4, 0, "", ""}, {"7", 0, 2, 4, 4, problemDuplicate, "sequences 2 to 3 again (first written earlier)"}, {"7", 0, 6, 1, 8, "", ""},
		}},
		{"a new epoch starts afresh, an old one is fenced", batchSequences, []batch{
			{"7", 0, 0, 5, 0, "", ""}, {"7", 1, 0, 1, 5, "", ""}, {"7", 0, 5, 1, 6, problemStaleEpoch, "epoch 0 written after epoch 1"}, {"7", 1, 1, 1, 7, "", ""},
		}},
		{"batch sequences wrap", batchSequences, []batch{
			{"7", 0, math.MaxInt32 - 1, 2, 0, "", ""}, {"7", 0, 0, 2, 2, "", ""}, {"7", 0, 3, 1, 4, problemSequenceGap, "sequences 2 to 2 missing between offsets 3 and 4"},
		}},
		{"numbered records", numberedSequences, []batch{
			{"p", 0, 0, 1, 0, "", ""}, {"p", 0, 1, 1, 1, "", ""}, {"p", 0, 1, 1, 2, problemDuplicate, "sequences 1 to 1 again (first written at offset 1)"},
			{"p", 0, 5, 1, 3, problemSequenceGap, "sequences 2 to 4 missing between offsets 2 and 3"},
		}},
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
	}
}
