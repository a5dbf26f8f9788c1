package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// The kinds of problem verify reports.
const (
	problemSequenceGap    = "sequence-gap"         // a producer's sequence skips numbers: records lost
	problemDuplicate      = "duplicate"            // a producer's sequence numbers written twice
	problemReorder        = "reorder"              // a number written after a later one of its producer: nothing lost
	problemStaleEpoch     = "stale-epoch"          // a fenced producer epoch written after a newer one
	problemOffsetGap      = "offset-gap"           // offsets skip where nothing may have removed records
	problemUnacknowledged = "missing-acknowledged" // verify --produce: an acknowledged record not read back
)

// problem is one gap or duplicate verify found in a partition.
type problem struct {
	Partition int32  `json:"partition"`
	Kind      string `json:"kind"`
	// Producer is the idempotent producer's id, or the numbered records'
	// producer name.
	Producer string `json:"producer,omitempty"`
	// Offset is where the problem shows: the first record after a gap, the
	// repeated record.
	Offset int64  `json:"offset"`
	Detail string `json:"detail"`
}

// sequenceSpace is how sequence numbers count: an idempotent producer's
// batch sequences wrap from 2^31-1 to 0, numbered records' do not.
type sequenceSpace int64

const (
	batchSequences    sequenceSpace = math.MaxInt32 + 1
	numberedSequences sequenceSpace = math.MaxInt64
)

// sequences checks, for one partition, that every producer's sequence
// numbers continue from the last ones seen, in offset order: contiguous
// from the first it sees (a read may start mid-way), or from 0 when the
// read covers the partition from its first offset (fromZero), and none
// twice. A new epoch of an idempotent producer starts its count afresh;
// an older epoch after a newer one is a fenced producer's write. Numbered
// records' gaps are reported at the end (finish): a number that comes
// later than a higher one is a reorder, not a loss and a duplicate.
type sequences struct {
	partition int32
	space     sequenceSpace
	fromZero  bool
	producers map[string]*producerRun
}

// producerRun is where one producer's sequence stands.
type producerRun struct {
	epoch int16
	next  int64
	// lastOffset is the offset of the producer's last record seen.
	lastOffset int64
	// firstAt maps the first sequence of each recent run of records to
	// its offset, to say where a duplicate was first written.
	firstAt map[int64]int64
	// missing are the numbers skipped so far (numbered records only).
	missing []gap
}

// gap is a run of missing numbers, [from, to], found missing between the
// records at offsets after (-1: the partition's start) and at.
type gap struct {
	from, to  int64
	after, at int64
	// atSeq is the number of the record at at.
	atSeq int64
}

// rememberedRuns bounds firstAt per producer.
const rememberedRuns = 4096

func newSequences(partition int32, space sequenceSpace) *sequences {
	return &sequences{partition: partition, space: space, producers: map[string]*producerRun{}}
}

// observe takes count sequence numbers from first, written by producer at
// epoch from offset on, and returns the problem they show, if any.
func (s *sequences) observe(producer string, epoch int16, first, count, offset int64) *problem {
	run, seen := s.producers[producer]
	if !seen || epoch > run.epoch {
		run = &producerRun{epoch: epoch, next: s.add(first, count), lastOffset: offset + count - 1, firstAt: map[int64]int64{first: offset}}
		s.producers[producer] = run
		if s.space == numberedSequences && s.fromZero && first > 0 {
			run.missing = append(run.missing, gap{from: 0, to: first - 1, after: -1, at: offset, atSeq: first})
		}
		return nil
	}
	if epoch < run.epoch {
		return &problem{Partition: s.partition, Kind: problemStaleEpoch, Producer: producer, Offset: offset,
			Detail: fmt.Sprintf("epoch %d written after epoch %d", epoch, run.epoch)}
	}
	ahead := s.distance(run.next, first)
	defer func() {
		if len(run.firstAt) >= rememberedRuns {
			clear(run.firstAt)
		}
		if _, ok := run.firstAt[first]; !ok {
			run.firstAt[first] = offset
		}
		if next := s.add(first, count); s.distance(run.next, next) > 0 && s.distance(run.next, next) < int64(s.space)/2 {
			run.next = next
		}
		run.lastOffset = max(run.lastOffset, offset+count-1)
	}()
	switch {
	case ahead == 0:
		return nil
	case ahead < int64(s.space)/2 && s.space == numberedSequences:
		run.missing = append(run.missing, gap{from: run.next, to: first - 1, after: run.lastOffset, at: offset, atSeq: first})
		if len(run.missing) > rememberedRuns {
			// Memory is bounded: the oldest gap is reported now, as a
			// loss, even if its numbers come later.
			oldest := run.missing[0]
			run.missing = run.missing[1:]
			p := s.gapProblem(producer, oldest)
			return &p
		}
		return nil
	case ahead < int64(s.space)/2:
		return &problem{Partition: s.partition, Kind: problemSequenceGap, Producer: producer, Offset: offset,
			Detail: fmt.Sprintf("sequences %d to %d missing between offsets %d and %d", run.next, s.add(first, -1), run.lastOffset, offset)}
	}
	if g, ok := run.fill(first); ok {
		return &problem{Partition: s.partition, Kind: problemReorder, Producer: producer, Offset: offset,
			Detail: fmt.Sprintf("sequence %d at offset %d, after sequence %d at offset %d", first, offset, g.atSeq, g.at)}
	}
	where := "earlier"
	if at, ok := run.firstAt[first]; ok {
		where = fmt.Sprintf("at offset %d", at)
	}
	repeated := min(count, s.distance(first, run.next))
	return &problem{Partition: s.partition, Kind: problemDuplicate, Producer: producer, Offset: offset,
		Detail: fmt.Sprintf("sequences %d to %d again (first written %s)", first, s.add(first, repeated-1), where)}
}

// fill takes seq out of the run's missing numbers, if it was one, and
// returns the gap it was in.
func (run *producerRun) fill(seq int64) (gap, bool) {
	for i, g := range run.missing {
		if seq < g.from || seq > g.to {
			continue
		}
		var rest []gap
		if seq > g.from {
			rest = append(rest, gap{from: g.from, to: seq - 1, after: g.after, at: g.at, atSeq: g.atSeq})
		}
		if seq < g.to {
			rest = append(rest, gap{from: seq + 1, to: g.to, after: g.after, at: g.at, atSeq: g.atSeq})
		}
		run.missing = append(run.missing[:i], append(rest, run.missing[i+1:]...)...)
		return g, true
	}
	return gap{}, false
}

// finish returns the numbers still missing once the read is done, by
// producer.
func (s *sequences) finish() []problem {
	var out []problem
	for _, producer := range slices.Sorted(maps.Keys(s.producers)) {
		for _, g := range s.producers[producer].missing {
			out = append(out, s.gapProblem(producer, g))
		}
	}
	return out
}

func (s *sequences) gapProblem(producer string, g gap) problem {
	detail := fmt.Sprintf("sequences %d to %d missing between offsets %d and %d", g.from, g.to, g.after, g.at)
	if g.after < 0 {
		detail = fmt.Sprintf("sequences %d to %d missing before offset %d (the partition holds every offset from 0, and numbers start at 0)", g.from, g.to, g.at)
	}
	return problem{Partition: s.partition, Kind: problemSequenceGap, Producer: producer, Offset: g.at, Detail: detail}
}

func (s *sequences) add(seq, n int64) int64 {
	if s.space == numberedSequences {
		return seq + n
	}
	return ((seq+n)%int64(s.space) + int64(s.space)) % int64(s.space)
}

// distance is how far ahead of from to lies, in the space's count.
func (s *sequences) distance(from, to int64) int64 {
	if s.space == numberedSequences {
		if to < from {
			return math.MaxInt64 // behind: a duplicate
		}
		return to - from
	}
	return ((to-from)%int64(s.space) + int64(s.space)) % int64(s.space)
}
