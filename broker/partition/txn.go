package partition

import (
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A partition's view of transactions (docs/design/transactions.md): the
// producers with a transaction open here and where it began, and the
// transactions aborted here, both read off the batches in the log. A
// transactional batch opens its producer's transaction; a control batch
// (a commit or abort marker) closes it.

// AbortedTxn is a transaction aborted on the partition: its producer and
// the offsets of its first batch and of its abort marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// txns is one partition's transaction table. It is a function of the
// batches in the log from its start, as the producer table is.
type txns struct {
	// open: producer id -> the first offset of its open transaction.
	open map[int64]int64
	// aborted, by the offset of their markers.
	aborted []AbortedTxn
	// ended: producer id -> the last transaction a marker ended here.
	ended map[int64]endedTxn
}

// endedTxn is the coordinator's sequence number of a producer's last
// transaction ended here, and where its marker is.
type endedTxn struct {
	Seq    int64
	Marker int64
}

func newTxns() txns { return txns{open: map[int64]int64{}, ended: map[int64]endedTxn{}} }

// isControl and isTransactional read a batch header's attributes.
func (h header) isControl() bool       { return h.Attributes&attrControl != 0 }
func (h header) isTransactional() bool { return h.Attributes&attrTransactional != 0 }

// marker is what a control batch says beyond its header.
type marker struct {
	abort bool
	seq   int64 // the coordinator's number of the transaction it ends
}

// record takes a batch appended at its header's offsets (m for a marker):
// a transactional batch opens its producer's transaction if none is open;
// a marker closes it, as aborted if it says so.
func (t *txns) record(h header, m marker) {
	switch {
	case !h.isTransactional():
	case h.isControl():
		t.ended[h.ProducerID] = endedTxn{Seq: m.seq, Marker: h.BaseOffset}
		first, ok := t.open[h.ProducerID]
		if !ok {
			return // a marker of a transaction that wrote nothing here
		}
		delete(t.open, h.ProducerID)
		if m.abort {
			t.aborted = append(t.aborted, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset})
		}
	default:
		if _, ok := t.open[h.ProducerID]; !ok {
			t.open[h.ProducerID] = h.BaseOffset
		}
	}
}

// opens reports whether a transactional batch of producerID, written for
// the coordinator's transaction seq, may go in: a batch that would open a
// transaction must belong to one not yet ended here. That refuses a late
// write of a transaction whose marker is already written, which would
// otherwise open a transaction nobody ends.
func (t *txns) opens(producerID, seq int64) bool {
	if _, ok := t.open[producerID]; ok {
		return true
	}
	e, ok := t.ended[producerID]
	return !ok || seq > e.Seq
}

// endedAlready reports whether a marker for transaction seq of producerID
// is one written before (a retry).
func (t *txns) endedAlready(producerID, seq int64) bool {
	e, ok := t.ended[producerID]
	return ok && seq <= e.Seq
}

// stable is the last stable offset: the first offset of the oldest open
// transaction, or end if none is open.
func (t *txns) stable(end int64) int64 {
	for _, first := range t.open {
		end = min(end, first)
	}
	return end
}

// abortedIn are the aborted transactions with records in [from, to), in
// the order of their markers: a read_committed Fetch lists them so that
// the client drops their records.
func (t *txns) abortedIn(from, to int64) []AbortedTxn {
	i, _ := slices.BinarySearchFunc(t.aborted, from, func(a AbortedTxn, off int64) int {
		return int(min(max(a.LastOffset-off, -1), 1))
	})
	var out []AbortedTxn
	for _, a := range t.aborted[i:] {
		if a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// trim forgets what lies below start, which retention or DeleteRecords
// removed: aborted transactions whose markers are there, and ended ones.
// Open transactions never begin below it (the log start stays at or
// below the last stable offset).
func (t *txns) trim(start int64) {
	i, _ := slices.BinarySearchFunc(t.aborted, start, func(a AbortedTxn, off int64) int {
		return int(min(max(a.LastOffset-off, -1), 1))
	})
	t.aborted = slices.Delete(t.aborted, 0, i)
	for id, e := range t.ended {
		if e.Marker < start {
			delete(t.ended, id)
		}
	}
}

// seqHeader is the control record header that carries the
// coordinator's number of the transaction a marker ends. Clients skip
// control records; the partition reads it back when it rebuilds its table
// from the log.
const seqHeader = "raftka.txn.seq"

// readMarker reads a control batch written by MarkerBatch. Its one
// record's key is Kafka's ControlRecordKey: a version and a type, 0 for
// abort and 1 for commit. A control batch of another type or shape (none
// is written here) is not a marker.
func readMarker(b []byte) (marker, bool) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil || rb.NumRecords != 1 {
		return marker{}, false
	}
	var rec kmsg.Record
	if err := rec.ReadFrom(rb.Records); err != nil {
		return marker{}, false
	}
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(rec.Key); err != nil {
		return marker{}, false
	}
	var m marker
	switch key.Type {
	case kmsg.ControlRecordKeyTypeAbort:
		m.abort = true
	case kmsg.ControlRecordKeyTypeCommit:
	default:
		return marker{}, false
	}
	for _, h := range rec.Headers {
		if h.Key == seqHeader && len(h.Value) == 8 {
			m.seq = int64(binary.BigEndian.Uint64(h.Value))
		}
	}
	return m, true
}

// MarkerBatch is the control batch that ends a producer's transaction on
// a partition, as Kafka writes it: one record whose key says commit or
// abort and whose value carries the coordinator's epoch, with a header
// naming the coordinator's transaction seq. Its offset and
// leader epoch are set when it is appended.
func MarkerBatch(producerID int64, epoch int16, seq int64, commit bool, coordinatorEpoch int32, timestampMs int64) []byte {
	typ := kmsg.ControlRecordKeyTypeAbort
	if commit {
		typ = kmsg.ControlRecordKeyTypeCommit
	}
	key := (&kmsg.ControlRecordKey{Version: 0, Type: typ}).AppendTo(nil)
	value := (&kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: coordinatorEpoch}).AppendTo(nil)
	rec := kmsg.Record{Key: key, Value: value, Headers: []kmsg.Header{{Key: seqHeader, Value: binary.BigEndian.AppendUint64(nil, uint64(seq))}}}
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - kbin.VarintLen(0))
	records := rec.AppendTo(nil)
	rb := kmsg.RecordBatch{Magic: 2, Attributes: attrTransactional | attrControl, FirstTimestamp: timestampMs, MaxTimestamp: timestampMs,
		ProducerID: producerID, ProducerEpoch: epoch, FirstSequence: -1, NumRecords: 1, Records: records}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
	return b
}
