package identity

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadTellsEmptyLegacyAndRecordedApart(t *testing.T) {
	dir := t.TempDir()
	raft := filepath.Join(dir, "raft")
	id, st, err := Load(dir, raft, 2)
	if err != nil || st != Empty || id.Incarnation == "" || id.BrokerID != 2 {
		t.Fatalf("empty directory: %+v %v %v", id, st, err)
	}
	again, _, _ := Load(dir, raft, 2)
	if again.Incarnation == id.Incarnation {
		t.Fatal("two loads of an empty directory drew the same incarnation")
	}
	if err := os.MkdirAll(filepath.Join(raft, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, st, _ := Load(dir, raft, 2); st != Legacy {
		t.Fatalf("Raft data without identity: state %v, want Legacy", st)
	}
	id.Generation, id.Registered, id.ClusterID = 3, true, "c1"
	if err := Save(dir, id); err != nil {
		t.Fatal(err)
	}
	got, st, err := Load(dir, raft, 2)
	if err != nil || st != Recorded || got != id {
		t.Fatalf("recorded: %+v %v %v, want %+v", got, st, err, id)
	}
	if _, _, err := Load(dir, raft, 1); err == nil {
		t.Fatal("a directory of broker 2 was accepted for broker 1")
	}
}
