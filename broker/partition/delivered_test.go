package partition

import "testing"

// DeliveredEnd finds the end of the last record a read_committed consumer
// is given, past markers and aborted records, across segments, and waits
// while a transaction below its bound is open.
func TestDeliveredEnd(t *testing.T) {
	segment := int64(2 * len(txnBatch(5, 0, 0, "0123456789"))) // about two batches a segment
	s, _ := openSM(t, t.TempDir(), segment)
	l := s.Log()
	apply(t, s, 1,
		produceTxn(1, 5, 0, 0, "0123456789"), // 0: aborted below
		writeMarker(5, 0, 1, false),          // 1
		produce(1, 6, 0, 0, "0123456789"),    // 2: given
		produceTxn(2, 5, 1, 0, "0123456789"), // 3: committed below
		produceTxn(2, 5, 1, 1, "0123456789"), // 4
		writeMarker(5, 1, 2, true),           // 5
		produceTxn(3, 5, 2, 0, "0123456789"), // 6: aborted below
		writeMarker(5, 2, 3, false),          // 7
		produce(1, 6, 0, 1, "a", "b", "c"),   // 8-10
		produceTxn(1, 7, 0, 0, "0123456789"), // 11: open
	)
	cases := []struct {
		to   int64
		want int64
		ok   bool
	}{
		{0, 0, true},
		{2, 0, true}, // an aborted record and its marker only
		{3, 3, true},
		{6, 5, true},   // past the commit marker: the records end at 5
		{8, 5, true},   // past an aborted transaction
		{10, 10, true}, // inside a batch: its record at 9
		{11, 11, true},
		{12, 0, false}, // producer 7's transaction is open
	}
	for _, c := range cases {
		if got, ok := l.DeliveredEnd(c.to); got != c.want || ok != c.ok {
			t.Errorf("DeliveredEnd(%d) = %d, %v; want %d, %v", c.to, got, ok, c.want, c.ok)
		}
	}
	apply(t, s, 11, writeMarker(7, 0, 1, false), DeleteRecordsCommand(3)) // 12: aborts 11
	for to, want := range map[int64]int64{13: 11, 3: 0, 6: 5} {
		if got, ok := l.DeliveredEnd(to); got != want || !ok {
			t.Errorf("after the abort and deleting below 3: DeliveredEnd(%d) = %d, %v; want %d", to, got, ok, want)
		}
	}
}
