package main

import (
	"fmt"
	"math"
)

// The kinds of problem verify reports.
const (
	problemSequenceGap    = "sequence-gap"         // a producer's sequence skips numbers: records lost
	problemDuplicate      = "duplicate"            // a producer's sequence numbers written twice
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
// from the first it sees (a read may start mid-way), none twice. A new
// epoch of an idempotent producer starts its count afresh; an older epoch
// after a newer one is a fenced producer's write.
type sequences struct {
	partition int32
	space     sequenceSpace
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
		s.producers[producer] = &producerRun{epoch: epoch, next: s.add(first, count), lastOffset: offset + count - 1, firstAt: map[int64]int64{first: offset}}
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
		run.firstAt[first] = offset
		if next := s.add(first, count); s.distance(run.next, next) > 0 && s.distance(run.next, next) < int64(s.space)/2 {
			run.next = next
		}
		run.lastOffset = offset + count - 1
	}()
	switch {
	case ahead == 0:
		return nil
	case ahead < int64(s.space)/2:
		return &problem{Partition: s.partition, Kind: problemSequenceGap, Producer: producer, Offset: offset,
			Detail: fmt.Sprintf("sequences %d to %d missing between offsets %d and %d", run.next, s.add(first, -1), run.lastOffset, offset)}
	default:
		where := "earlier"
		if at, ok := run.firstAt[first]; ok {
			where = fmt.Sprintf("at offset %d", at)
		}
		repeated := min(count, s.distance(first, run.next))
		return &problem{Partition: s.partition, Kind: problemDuplicate, Producer: producer, Offset: offset,
			Detail: fmt.Sprintf("sequences %d to %d again (first written %s)", first, s.add(first, repeated-1), where)}
	}
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
