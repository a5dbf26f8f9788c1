package partition

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/brokertest"
)

// txnBatch is a transactional producer's batch.
func txnBatch(pid int64, pepoch int16, seq int32, values ...string) []byte {
	b := brokertest.RecordBatch(pid, pepoch, seq, values...)
	binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|attrTransactional)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
	return b
}

func produceTxn(seq int64, pid int64, pepoch int16, pseq int32, values ...string) []byte {
	return ProduceTxnCommand(1, seq, -1, txnBatch(pid, pepoch, pseq, values...))
}

func writeMarker(pid int64, pepoch int16, seq int64, commit bool) []byte {
	return WriteMarkerCommand(1, MarkerBatch(pid, pepoch, seq, commit, 0, 1000))
}

// expectResults fails t unless each result has the offset or the error
// wanted (an offset of -1 wants the error).
func expectResults(t *testing.T, got []Result, want ...any) {
	t.Helper()
	for i, w := range want {
		switch w := w.(type) {
		case error:
			if !errors.Is(got[i].Err, w) {
				t.Fatalf("result %d: %+v, want %v", i, got[i], w)
			}
		case int:
			if got[i].Err != nil || got[i].BaseOffset != int64(w) {
				t.Fatalf("result %d: %+v, want offset %d", i, got[i], w)
			}
		}
	}
}

func TestTransactionsOnAPartition(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 1<<20)
	l := s.Log()
	res := apply(t, s, 1,
		produceTxn(1, 5, 0, 0, "a"),               // 0: producer 5 opens transaction 1
		produce(1, 6, 0, 0, "b"),                  // 1: not transactional
		produceTxn(1, 5, 0, 1, "c"),               // 2
		ProduceCommand(1, txnBatch(7, 0, 0, "x")), // a transactional batch the leader did not check
	)
	expectResults(t, res, 0, 1, 2, kerr.InvalidTxnState)
	if got := l.LastStable(); got != 0 {
		t.Fatalf("last stable offset %d with producer 5's transaction open from 0", got)
	}
	res = apply(t, s, 5,
		writeMarker(5, 0, 1, false),    // 3: abort
		writeMarker(5, 0, 1, false),    // the retried marker
		produceTxn(1, 5, 0, 2, "late"), // a write of transaction 1 after its marker
		produceTxn(2, 5, 0, 2, "d"),    // 4: transaction 2
	)
	expectResults(t, res, 3, 3, kerr.InvalidTxnState, 4)
	if got := l.LastStable(); got != 4 {
		t.Fatalf("last stable offset %d, want 4 (transaction 2's first batch)", got)
	}
	if got, want := l.AbortedIn(0, 10), []AbortedTxn{{ProducerID: 5, FirstOffset: 0, LastOffset: 3}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	// KIP-890 part 2: the commit marker bumps the epoch; the old epoch is
	// fenced and the new one starts its sequence at 0.
	res = apply(t, s, 9,
		writeMarker(5, 1, 2, true), // 5
		produceTxn(3, 5, 0, 3, "zombie"),
		produceTxn(3, 5, 1, 0, "e"), // 6
		DeleteRecordsCommand(7),     // the log start stops at the open transaction
	)
	expectResults(t, res, 5, kerr.InvalidProducerEpoch, 6)
	if start, _ := l.Offsets(); start != 6 || l.LastStable() != 6 {
		t.Fatalf("log start %d and last stable offset %d after deleting below 7, want both 6", start, l.LastStable())
	}
	before := shapeOf(l)
	closeSM(t, s)
	reopened, _ := openSM(t, dir, 1<<20) // and by reading every header: requireOpenedAsAFullScan
	if got := shapeOf(reopened.Log()); !reflect.DeepEqual(got.Txns, before.Txns) {
		t.Fatalf("transaction table after reopening:\n%+v\nbefore:\n%+v", got.Txns, before.Txns)
	}
	res = apply(t, reopened, 13, writeMarker(5, 1, 3, true), produceTxn(3, 5, 1, 1, "late after reopening"))
	expectResults(t, res, 7, kerr.InvalidTxnState)
}

// The log start moved into an aborted transaction gives the same table
// to a running replica and to one that reopens and reads the headers.
func TestAbortedTransactionCutByTheLogStart(t *testing.T) {
	history := [][]byte{
		produceTxn(1, 5, 0, 0, "0123456789"),
		produce(1, 6, 0, 0, "0123456789"),
		produceTxn(1, 5, 0, 1, "0123456789"),
		produce(1, 6, 0, 1, "0123456789"),
		writeMarker(5, 0, 1, false),
		produce(1, 6, 0, 2, "0123456789"),
		DeleteRecordsCommand(2),
	}
	segment := int64(2 * len(txnBatch(5, 0, 0, "0123456789"))) // two batches a segment
	dir := t.TempDir()
	running, _ := openSM(t, dir, segment)
	apply(t, running, 1, history...)
	if got, want := running.Log().AbortedIn(0, 10), []AbortedTxn{{ProducerID: 5, FirstOffset: 2, LastOffset: 4}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	want := shapeOf(running.Log()).Txns
	closeSM(t, running)
	reopened, _ := openSM(t, dir, segment)
	if got := shapeOf(reopened.Log()).Txns; !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened:\n%+v\nrunning:\n%+v", got, want)
	}
}
