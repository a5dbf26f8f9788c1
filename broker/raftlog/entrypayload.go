package raftlog

import (
	"encoding/binary"

	pb "github.com/lni/dragonboat/v3/raftpb"
)

// entryPayload is a Raft entry as its frame holds it, in Dragonboat's
// encoding, split around its command (frames.SplitPayload): a produced
// batch goes from the proposal to the file without being copied into a
// frame first.
type entryPayload struct{ *pb.Entry }

// The encoding (Dragonboat's raftpb, Colfer) writes the command last, as
// field cmdField with its length as a varint, and ends every entry with
// entryEnd; TestEntryPayloadSplitsAsItMarshals holds it to MarshalTo.
const (
	cmdField = 7
	entryEnd = 0x7f
)

// Split implements frames.SplitPayload.
func (e entryPayload) Split() (head, body, tail []byte) {
	rest := *e.Entry
	rest.Cmd = nil
	head = make([]byte, rest.Size()+1+binary.MaxVarintLen64)
	n, _ := rest.MarshalTo(head)
	head = head[:n-1] // without the end, which follows the command
	if len(e.Cmd) > 0 {
		head = append(head, cmdField)
		head = binary.AppendUvarint(head, uint64(len(e.Cmd)))
	}
	return head, e.Cmd, entryEndBytes
}

// entryEndBytes is every split entry's tail; the frame log only reads it.
var entryEndBytes = []byte{entryEnd}
