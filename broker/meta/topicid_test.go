package meta

import (
	"bytes"
	"testing"

	sm "github.com/lni/dragonboat/v3/statemachine"
)

// Topics are found by id after creation and after a snapshot is recovered
// (the index is derived, not in the snapshot), and no longer once deleted.
func TestTopicByIDFollowsCreateSnapshotAndDelete(t *testing.T) {
	m := NewStateMachine()
	cmds := []*Command{
		{RegisterBroker: &Broker{ID: 0, Host: "127.0.0.1", Port: 9092, RaftAddr: "r"}},
		{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "orders", Partitions: 1, ReplicationFactor: 1}},
	}
	for i, c := range cmds {
		if _, err := m.Update([]sm.Entry{{Index: uint64(i + 1), Cmd: c.Encode()}}); err != nil {
			t.Fatal(err)
		}
	}
	var id [16]byte
	m.Read(func(s *State) { id = s.topics["orders"].ID })
	found := func(m *StateMachine) (name string) {
		m.Read(func(s *State) {
			if tp := s.TopicByID(id); tp != nil {
				name = tp.Name
			}
		})
		return name
	}
	if got := found(m); got != "orders" {
		t.Fatalf("TopicByID after create: %q", got)
	}

	snap, err := m.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.SaveSnapshot(snap, &buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	recovered := NewStateMachine()
	if err := recovered.RecoverFromSnapshot(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := found(recovered); got != "orders" {
		t.Fatalf("TopicByID after snapshot recovery: %q", got)
	}

	del := &Command{DeleteTopic: "orders"}
	if _, err := recovered.Update([]sm.Entry{{Index: 3, Cmd: del.Encode()}}); err != nil {
		t.Fatal(err)
	}
	if got := found(recovered); got != "" {
		t.Fatalf("TopicByID after delete: %q", got)
	}
}
