package partition

import (
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnHeader(pid, offset int64, control bool) header {
	h := header{BaseOffset: offset, ProducerID: pid, Attributes: attrTransactional}
	if control {
		h.Attributes |= attrControl
	}
	return h
}

var (
	commitMarker = marker{}
	abortMarker  = marker{abort: true}
)

func TestTxnTableFollowsTheLog(t *testing.T) {
	tx := newTxns()
	tx.record(header{BaseOffset: 0, ProducerID: 9}, marker{}) // idempotent, not transactional
	tx.record(txnHeader(1, 1, false), marker{})
	tx.record(txnHeader(2, 3, false), marker{})
	tx.record(txnHeader(1, 4, false), marker{}) // the same transaction goes on
	if got := tx.stable(10); got != 1 {
		t.Fatalf("last stable offset %d, want 1 (producer 1's first batch)", got)
	}
	tx.record(txnHeader(1, 5, true), commitMarker)
	if got := tx.stable(10); got != 3 {
		t.Fatalf("last stable offset after producer 1 committed: %d, want 3", got)
	}
	tx.record(txnHeader(2, 6, true), abortMarker)
	tx.record(txnHeader(3, 7, true), abortMarker) // a marker with nothing open here
	if got := tx.stable(10); got != 10 {
		t.Fatalf("last stable offset with nothing open: %d, want the end", got)
	}
	want := []AbortedTxn{{ProducerID: 2, FirstOffset: 3, LastOffset: 6}}
	if !reflect.DeepEqual(tx.aborted, want) {
		t.Fatalf("aborted %+v, want %+v", tx.aborted, want)
	}
	tx.record(txnHeader(2, 8, false), marker{})
	tx.record(txnHeader(2, 9, true), abortMarker)
	for _, c := range []struct {
		from, to int64
		want     int
	}{{0, 3, 0}, {0, 4, 1}, {6, 7, 1}, {7, 8, 0}, {7, 20, 1}, {0, 20, 2}} {
		if got := tx.abortedIn(c.from, c.to); len(got) != c.want {
			t.Errorf("aborted in [%d, %d): %+v, want %d", c.from, c.to, got, c.want)
		}
	}
	tx.trim(7)
	if len(tx.aborted) != 1 || tx.aborted[0].FirstOffset != 8 {
		t.Fatalf("after trimming below 7: %+v", tx.aborted)
	}
}

// A marker batch is a valid RecordBatch v2 that Kafka's clients read as a
// commit or an abort marker of its producer.
func TestMarkerBatchIsKafkasControlBatch(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := MarkerBatch(77, 3, 12, commit, 5, 1234)
		h, err := readHeader(b)
		if err != nil || int(h.Length) != len(b) {
			t.Fatalf("marker batch header %+v of %d bytes: %v", h, len(b), err)
		}
		if crc32.Checksum(b[offAttributes:], crc32c) != binary.BigEndian.Uint32(b[offCRC:]) {
			t.Fatal("marker batch CRC does not match")
		}
		if !h.isControl() || !h.isTransactional() || h.ProducerID != 77 || h.ProducerEpoch != 3 || h.LastDelta != 0 {
			t.Fatalf("header %+v", h)
		}
		m, ok := readMarker(b)
		if !ok || m.abort == commit || m.seq != 12 {
			t.Fatalf("commit %v of transaction 12 read back as %+v (ok %v)", commit, m, ok)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(rb.Records); err != nil {
			t.Fatal(err)
		}
		var v kmsg.EndTxnMarker
		if err := v.ReadFrom(rec.Value); err != nil || v.CoordinatorEpoch != 5 {
			t.Fatalf("marker value %+v: %v", v, err)
		}
	}
}

// A late write of a transaction whose marker is written does not open a
// transaction here; the next transaction's first write does.
func TestLateWriteDoesNotReopenAnEndedTransaction(t *testing.T) {
	tx := newTxns()
	if !tx.opens(1, 4) {
		t.Fatal("a producer's first transaction here is refused")
	}
	tx.record(txnHeader(1, 0, false), marker{})
	tx.record(txnHeader(1, 1, true), marker{seq: 4})
	if tx.opens(1, 4) || tx.opens(1, 3) {
		t.Fatal("a write of transaction 4 (or older) after its marker would open a transaction")
	}
	if !tx.opens(1, 5) {
		t.Fatal("the next transaction's write is refused")
	}
	if !tx.endedAlready(1, 4) || tx.endedAlready(1, 5) {
		t.Fatal("a retried marker is not told from a new one")
	}
	tx.trim(2)
	if tx.endedAlready(1, 4) {
		t.Fatal("an ended transaction whose marker retention removed is still remembered")
	}
}
