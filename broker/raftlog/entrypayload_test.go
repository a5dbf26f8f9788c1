package raftlog

import (
	"bytes"
	"math/rand/v2"
	"testing"

	pb "github.com/lni/dragonboat/v3/raftpb"
)

// A frame holds an entry as Dragonboat marshals it, whether the frame log
// copies it whole or writes it in the parts Split gives: head, command,
// tail must be MarshalTo's bytes exactly, for every field's width.
func TestEntryPayloadSplitsAsItMarshals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	widths := []uint64{0, 1, 127, 128, 1 << 14, 1<<49 - 1, 1 << 49, 1<<64 - 1}
	field := func() uint64 { return widths[rng.IntN(len(widths))] }
	cmdLens := []int{0, 1, 127, 128, 4096, 16383, 16384, 1 << 20}
	for i := 0; i < 2000; i++ {
		e := &pb.Entry{Term: field(), Index: field(), Key: field(), ClientID: field(), SeriesID: field(), RespondedTo: field(),
			Type: []pb.EntryType{pb.ApplicationEntry, pb.ConfigChangeEntry, pb.EncodedEntry, pb.MetadataEntry}[rng.IntN(4)]}
		if n := cmdLens[rng.IntN(len(cmdLens))]; n > 0 {
			e.Cmd = make([]byte, n)
			for j := range e.Cmd {
				e.Cmd[j] = byte(rng.Uint32())
			}
		}
		want := make([]byte, e.Size())
		if n, err := e.MarshalTo(want); err != nil || n != len(want) {
			t.Fatalf("entry %+v: marshaled %d of %d bytes: %v", e, n, len(want), err)
		}
		head, body, tail := entryPayload{e}.Split()
		got := bytes.Join([][]byte{head, body, tail}, nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("entry (term %d index %d type %d key %d client %d series %d responded %d, %d-byte command): split into %d bytes that differ from the %d marshaled",
				e.Term, e.Index, e.Type, e.Key, e.ClientID, e.SeriesID, e.RespondedTo, len(e.Cmd), len(got), len(want))
		}
		if len(e.Cmd) > 0 && &body[0] != &e.Cmd[0] {
			t.Fatal("the command was copied, not split out where it lies")
		}
	}
}
