package raftlog

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	pb "github.com/lni/dragonboat/v3/raftpb"
)

// FuzzOpen writes arbitrary bytes after a valid file's records, or into
// them, and opens the store: a damaged file is refused with an error or
// read up to the damage, never a panic. Records are CRC-checked, so the
// fuzzer also gets the CRC of its input fixed up to reach the decoders.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(dir, 0)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.SaveBootstrapInfo(1, 1, pb.Bootstrap{Type: pb.OnDiskStateMachine}); err != nil {
		f.Fatal(err)
	}
	if err := s.SaveRaftState([]pb.Update{{ClusterID: 1, NodeID: 1, State: pb.State{Term: 2, Commit: 1}, EntriesToSave: entries(1, 3, 2, 20), Snapshot: pb.Snapshot{Index: 1, Term: 1, Type: pb.OnDiskStateMachine}}}, 1); err != nil {
		f.Fatal(err)
	}
	_ = s.Close()
	nos, _ := fileNumbers(dir)
	valid, err := os.ReadFile(filepath.Join(dir, "00000001.wal"))
	if err != nil || len(nos) != 1 {
		f.Fatalf("seed: files %v: %v", nos, err)
	}
	f.Add(valid, uint16(0), false)
	f.Add(valid, uint16(len(valid)/2), true)
	f.Fuzz(func(t *testing.T, data []byte, at uint16, sealed bool) {
		file := append([]byte(nil), valid...)
		if sealed && len(data) > 0 {
			rec := append(make([]byte, recordHeader), data...)
			data = seal(rec)
			binary.BigEndian.PutUint32(data[4:8], binary.BigEndian.Uint32(data[4:8])^fileMask(1))
		}
		if int(at) < len(file) {
			file = append(file[:at], data...)
		} else {
			file = append(file, data...)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "00000001.wal"), file, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, 0)
		if err != nil {
			return
		}
		for k := range s.nodes {
			_, _, _ = s.IterateEntries(nil, 0, k.shard, k.node, 0, 100, 1<<20)
			_, _ = s.ReadRaftState(k.shard, k.node, 0)
		}
		_ = s.Close()
	})
}
