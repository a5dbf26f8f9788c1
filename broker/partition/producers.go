package partition

import "github.com/twmb/franz-go/pkg/kerr"

// producerWindow is how many recent batches per producer are remembered, the
// same bound as Kafka's max.in.flight.requests.per.connection for idempotence.
const producerWindow = 5

type producerBatch struct {
	FirstSeq, LastSeq      int32
	BaseOffset, LastOffset int64
	MaxTimestamp           int64
}

type producerState struct {
	Epoch  int16
	Recent []producerBatch // oldest first, at most producerWindow
	// Marker is the offset of the producer's last transaction marker, -1
	// for none: a marker that bumped the epoch leaves a producer with no
	// batch of that epoch yet, remembered for as long as the marker is
	// in the log.
	Marker int64
}

// producers is the idempotent-producer table of one partition. It is a
// function of the batches in the log, trimmed with the log's start: an open
// rebuilds it from the fold file of the newest segment and the headers
// after it (see sidecar.go), or from every header.
type producers map[int64]*producerState

// verdict says what to do with a batch from an idempotent producer.
type verdict struct {
	err       error
	duplicate bool
	offset    int64 // the original first offset of a duplicate
}

func (p producers) check(h header, logStartOffset int64) verdict {
	if h.ProducerID < 0 {
		return verdict{}
	}
	st := p[h.ProducerID]
	switch {
	case st == nil:
		// A producer we never saw must start at 0, unless retention removed
		// its earlier batches and with them our memory of it.
		if h.BaseSequence != 0 && logStartOffset == 0 {
			return verdict{err: kerr.OutOfOrderSequenceNumber}
		}
		return verdict{}
	case h.ProducerEpoch < st.Epoch:
		return verdict{err: kerr.InvalidProducerEpoch}
	case h.ProducerEpoch > st.Epoch:
		if h.BaseSequence != 0 {
			return verdict{err: kerr.OutOfOrderSequenceNumber}
		}
		return verdict{}
	}
	if len(st.Recent) == 0 {
		// The first batch of the epoch a marker gave, or after retention
		// removed the producer's batches.
		if h.BaseSequence != 0 && logStartOffset == 0 {
			return verdict{err: kerr.OutOfOrderSequenceNumber}
		}
		return verdict{}
	}
	for _, b := range st.Recent {
		if b.FirstSeq == h.BaseSequence && b.LastSeq == h.lastSequence() {
			return verdict{duplicate: true, offset: b.BaseOffset}
		}
	}
	if last := st.Recent[len(st.Recent)-1]; h.BaseSequence != addSeq(last.LastSeq, 1) {
		return verdict{err: kerr.OutOfOrderSequenceNumber}
	}
	return verdict{}
}

func (p producers) record(h header) {
	if h.ProducerID < 0 {
		return
	}
	st := p[h.ProducerID]
	if st == nil || h.ProducerEpoch > st.Epoch {
		st = &producerState{Epoch: h.ProducerEpoch, Marker: -1}
		p[h.ProducerID] = st
	}
	if h.isControl() {
		st.Marker = h.BaseOffset
		return
	}
	st.Recent = append(st.Recent, producerBatch{FirstSeq: h.BaseSequence, LastSeq: h.lastSequence(), BaseOffset: h.BaseOffset,
		LastOffset: h.BaseOffset + int64(h.LastDelta), MaxTimestamp: h.MaxTimestamp})
	if len(st.Recent) > producerWindow {
		st.Recent = append(st.Recent[:0], st.Recent[len(st.Recent)-producerWindow:]...)
	}
}

// dropBefore forgets the batches that end below the log start, and the
// producers left with none. That is what rebuilding the table from the
// remaining batches would give: a producer's remaining batches are a suffix
// of its history, so the last five of them are the unforgotten ones.
func (p producers) dropBefore(start int64) {
	for id, st := range p {
		i := 0
		for i < len(st.Recent) && st.Recent[i].LastOffset < start {
			i++
		}
		st.Recent = st.Recent[i:]
		if st.Marker < start {
			st.Marker = -1
		}
		if len(st.Recent) == 0 && st.Marker < 0 {
			delete(p, id)
		}
	}
}
