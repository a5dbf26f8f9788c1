package partition

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// allValues are the values of every record in the log, in order, as a
// read_uncommitted consumer reads them.
func allValues(t *testing.T, l *Log) string {
	t.Helper()
	var out []string
	from, end := l.Offsets()
	for from < end {
		data, err := l.Read(from, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		rp := kmsg.FetchResponseTopicPartition{HighWatermark: end, LastStableOffset: end, RecordBatches: data}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: from, Topic: "t"}, &rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil || next <= from {
			t.Fatalf("reading at %d: %v (next %d)", from, fp.Err, next)
		}
		for _, r := range fp.Records {
			out = append(out, string(r.Value))
		}
		from = next
	}
	return strings.Join(out, " ")
}

// committedTable is what a read_committed consumer of the whole log ends
// with: the newest value of each key it is shown.
func committedTable(t *testing.T, l *Log) map[string]string {
	t.Helper()
	table := map[string]string{}
	from, _ := l.Offsets()
	for from < l.LastStable() {
		data, err := l.Read(from, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		data = RecordsBefore(data, l.LastStable())
		rp := kmsg.FetchResponseTopicPartition{HighWatermark: l.LastStable(), LastStableOffset: l.LastStable(), RecordBatches: data}
		for _, a := range l.AbortedIn(from, EndOfBatches(data)) {
			rp.AbortedTransactions = append(rp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: from, Topic: "t", IsolationLevel: kgo.ReadCommitted()},
			&rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil || next <= from {
			t.Fatalf("reading at %d: %v (next %d)", from, fp.Err, next)
		}
		for _, r := range fp.Records {
			table[string(r.Key)] = string(r.Value)
		}
		from = next
	}
	return table
}

// Compaction of transactions, as Kafka's cleaner does it: a record of an
// aborted transaction does not take the place of a committed one of its
// key and is removed itself; a committed transaction's records are
// compacted as others; markers stay, and say what they ended after a
// reopen.
func TestCompactionOfTransactions(t *testing.T) {
	dir := t.TempDir()
	s, _ := openSM(t, dir, 0)
	s.SetSegmentLimits(0, 1000) // the last batch, 5 s later, rolls a new segment
	txnKeyed := func(seq int64, pseq int32, records ...kv) []byte {
		b := keyedBatch(t, kgo.NoCompression(), 0, 5, pseq, records...)
		binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|attrTransactional)
		binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
		return ProduceTxnCommand(1, seq, -1, b)
	}
	apply(t, s, 1,
		ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), 0, -1, 0, kv{"k", val("kept")})),
		txnKeyed(1, 0, kv{"k", val("aborted")}), writeMarker(5, 0, 1, false),
		txnKeyed(2, 1, kv{"j", val("1")}), writeMarker(5, 0, 2, true),
		txnKeyed(3, 2, kv{"j", val("2")}), writeMarker(5, 0, 3, true),
		ProduceCommand(1, keyedBatch(t, kgo.NoCompression(), 5000, -1, 0, kv{"z", val("z")})))
	want := fmt.Sprint(map[string]string{"k": "kept", "j": "2", "z": "z"})
	if got := fmt.Sprint(committedTable(t, s.Log())); got != want {
		t.Fatalf("before compaction a read_committed consumer's table is %s, want %s", got, want)
	}
	res, err := s.Clean(CleanOptions{NowMs: 10_000, DeleteRetentionMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(committedTable(t, s.Log())); got != want {
		t.Fatalf("after compaction a read_committed consumer's table is %s, want %s", got, want)
	}
	if res.RecordsRemoved != 2 {
		t.Fatalf("compaction removed %d records, want 2: the aborted k and the committed j=1 that j=2 replaced", res.RecordsRemoved)
	}
	if got := allValues(t, s.Log()); got != "kept 2 z" {
		t.Fatalf("after compaction the log holds %q, want the aborted record and j=1 gone", got)
	}
	closeSM(t, s)
	reopened, _ := openSM(t, dir, 0) // the transaction table read off the headers, checked against the fold
	if got := fmt.Sprint(committedTable(t, reopened.Log())); got != want || reopened.Log().LastStable() != 8 {
		t.Fatalf("after reopening: table %s, last stable offset %d; want %s and 8", got, reopened.Log().LastStable(), want)
	}
}
