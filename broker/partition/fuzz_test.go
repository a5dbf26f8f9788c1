package partition

import (
	"encoding/binary"
	"testing"

	sm "github.com/lni/dragonboat/v3/statemachine"

	"github.com/raftka/raftka/broker/brokertest"
)

// FuzzUpdate feeds arbitrary entries to the state machine: it must never
// fail or panic on bad commands, and offsets must only grow.
func FuzzUpdate(f *testing.F) {
	f.Add(produce(1, -1, 0, 0, "a"))
	f.Add(produce(2, 9, 0, 0, "a", "b", "c"))
	f.Add(append(produce(1, 9, 0, 0, "a"), brokertest.RecordBatch(9, 0, 1, "b")...))
	f.Add(DeleteRecordsCommand(1))
	f.Add([]byte{cmdProduce, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewStateMachine(t.TempDir(), 4096, nil, nil)
		if _, err := s.Open(nil); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// The input is one or more commands, each prefixed by a 2-byte length.
		var entries []sm.Entry
		for len(data) >= 2 && len(entries) < 16 {
			n := int(binary.BigEndian.Uint16(data))
			data = data[2:]
			n = min(n, len(data))
			entries = append(entries, sm.Entry{Index: uint64(len(entries) + 1), Cmd: data[:n]})
			data = data[n:]
		}
		if len(data) > 0 {
			entries = append(entries, sm.Entry{Index: uint64(len(entries) + 1), Cmd: data})
		}
		if len(entries) == 0 {
			return
		}
		var lastEnd int64
		for _, e := range entries {
			if _, err := s.Update([]sm.Entry{e}); err != nil {
				t.Fatalf("update failed: %v", err)
			}
			start, end := s.Log().Offsets()
			if end < lastEnd || start > end {
				t.Fatalf("offsets went from end %d to [%d, %d)", lastEnd, start, end)
			}
			lastEnd = end
		}
	})
}
