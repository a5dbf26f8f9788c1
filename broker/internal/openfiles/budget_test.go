package openfiles

import (
	"os"
	"testing"
)

func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		limit, maxReplicas int
	}{
		{1024, 256}, // the reserve's floor: (1024-256)/3
		{20000, 6000},
		{1 << 20, 314573},
		{100, 1},
	} {
		b := Budget{Limit: tc.limit}
		if got := b.MaxReplicas(); int(got) != tc.maxReplicas {
			t.Errorf("limit %d: %d replicas, want %d", tc.limit, got, tc.maxReplicas)
		}
	}
	b := Budget{Limit: 20000}
	if !b.RoomForReplica(18997) || b.RoomForReplica(18998) {
		t.Error("room for a replica is not at half the reserve of 2,000")
	}
}

func TestOpenCountsThisProcesssFiles(t *testing.T) {
	before, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if after, _ := Open(); after != before+1 {
		t.Fatalf("%d open files after opening one more than %d", after, before)
	}
}
