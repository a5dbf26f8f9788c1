package server

import (
	"testing"
	"time"

	"github.com/lni/dragonboat/v3"
)

func pendingFor(n int) ([]pendingProduce, []chan dragonboat.RequestResult, []chan struct{}) {
	var pending []pendingProduce
	var results []chan dragonboat.RequestResult
	var deposed []chan struct{}
	for range n {
		rc, dc := make(chan dragonboat.RequestResult, 1), make(chan struct{})
		pending = append(pending, pendingProduce{rs: &dragonboat.RequestState{CompletedC: rc}, deposed: dc})
		results, deposed = append(results, rc), append(deposed, dc)
	}
	return pending, results, deposed
}

// The results are taken as they come, whatever the order of the request's
// partitions, and the spread runs from the first to the last.
func TestAwaitInTurnTimesTheSpread(t *testing.T) {
	pending, results, _ := pendingFor(3)
	go func() {
		results[2] <- dragonboat.RequestResult{}
		time.Sleep(20 * time.Millisecond)
		results[0] <- dragonboat.RequestResult{}
		results[1] <- dragonboat.RequestResult{}
	}()
	got, spread := awaitInTurn(pending)
	for i, r := range got {
		if r == nil {
			t.Fatalf("partition %d: no result", i)
		}
	}
	if spread < 20*time.Millisecond || spread > 5*time.Second {
		t.Fatalf("spread %v, want at least the 20 ms between the first result and the last", spread)
	}
}

// A partition whose leadership moves stops the timing, and leaves the
// partitions not yet answered to awaitProposal's grace.
func TestAwaitInTurnStopsAtADeposedPartition(t *testing.T) {
	pending, results, deposed := pendingFor(3)
	results[1] <- dragonboat.RequestResult{}
	close(deposed[0])
	got, spread := awaitInTurn(pending)
	if spread != -1 {
		t.Fatalf("spread %v, want -1", spread)
	}
	if got[0] != nil || got[2] != nil {
		t.Fatalf("results %v for partitions not answered", got)
	}
	if single, spread := awaitInTurn(pending[2:]); spread != -1 || single[0] != nil {
		t.Fatalf("one partition: spread %v, results %v; want -1 and none taken", spread, single)
	}
}
