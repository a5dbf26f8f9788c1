package partition

import (
	"bytes"
	"context"
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
		defer closeSM(t, s)
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

// onceSource serves fixed bytes on the first fetch, then stops the recovery.
type onceSource struct {
	data  []byte
	done  chan struct{}
	calls int
}

func (o *onceSource) Fetch(context.Context, int64, int32) ([]byte, int64, error) {
	o.calls++
	if o.calls == 1 {
		return o.data, 0, nil
	}
	close(o.done)
	return nil, 0, nil
}

// FuzzSnapshotCatchUp feeds arbitrary bytes to a replica as the records its
// peers sent while it catches up from a snapshot: it must not panic, never
// go past the snapshot's end, and reopen afterwards.
func FuzzSnapshotCatchUp(f *testing.F) {
	next := brokertest.RecordBatch(-1, 0, 0, "b", "c")
	patchBatch(next, 1, 0)
	f.Add(next, int64(3))
	f.Add(append(append([]byte(nil), next...), next...), int64(2))
	f.Add(brokertest.RecordBatch(-1, 0, 0, "x"), int64(1))
	f.Fuzz(func(t *testing.T, fetched []byte, end int64) {
		if end < 0 || end > 1<<20 {
			return
		}
		dir := t.TempDir()
		done := make(chan struct{})
		s := NewStateMachine(dir, 4096, &onceSource{data: fetched, done: done}, nil)
		if _, err := s.Open(nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update([]sm.Entry{{Index: 1, Cmd: produce(1, -1, 0, 0, "a")}}); err != nil {
			t.Fatal(err)
		}
		hdr := binary.BigEndian.AppendUint64([]byte(snapshotMagic), 10)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(end))
		hdr = binary.BigEndian.AppendUint64(hdr, 0)
		err := s.RecoverFromSnapshot(bytes.NewReader(hdr), done)
		if _, last := s.Log().Offsets(); last > max(end, 1) {
			t.Fatalf("log ends at %d, past the snapshot's end %d (recovery: %v)", last, end, err)
		}
		closeSM(t, s)
		reopened := NewStateMachine(dir, 4096, nil, nil)
		if _, err := reopened.Open(nil); err != nil {
			t.Fatalf("reopen after recovery: %v", err)
		}
		closeSM(t, reopened)
	})
}
