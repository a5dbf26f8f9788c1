package server

import (
	"testing"
	"time"

	"github.com/lni/dragonboat/v3"
)

func proposalChannels(n int) ([]chan dragonboat.RequestResult, []chan struct{}, []<-chan dragonboat.RequestResult, []<-chan struct{}) {
	var results []chan dragonboat.RequestResult
	var deposed []chan struct{}
	var resultsIn []<-chan dragonboat.RequestResult
	var deposedIn []<-chan struct{}
	for range n {
		rc, dc := make(chan dragonboat.RequestResult, 1), make(chan struct{})
		results, deposed = append(results, rc), append(deposed, dc)
		resultsIn, deposedIn = append(resultsIn, rc), append(deposedIn, dc)
	}
	return results, deposed, resultsIn, deposedIn
}

// The results are taken as they come, whatever the order of the request's
// partitions, and the spread runs from the first to the last.
func TestFirstToLastTimesTheSpread(t *testing.T) {
	results, _, in, deposed := proposalChannels(3)
	go func() {
		results[2] <- dragonboat.RequestResult{}
		time.Sleep(20 * time.Millisecond)
		results[0] <- dragonboat.RequestResult{}
		results[1] <- dragonboat.RequestResult{}
	}()
	got, spread := firstToLast(in, deposed)
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
func TestFirstToLastStopsAtADeposedPartition(t *testing.T) {
	results, deposed, in, deposedIn := proposalChannels(3)
	results[1] <- dragonboat.RequestResult{}
	close(deposed[0])
	got, spread := firstToLast(in, deposedIn)
	if spread != -1 {
		t.Fatalf("spread %v, want -1", spread)
	}
	if got[0] != nil || got[2] != nil {
		t.Fatalf("results %v for partitions not answered", got)
	}
}

// A request for one partition is not timed, and its result is left to
// awaitProposal.
func TestAwaitInTurnLeavesOnePartitionAlone(t *testing.T) {
	got, spread := awaitInTurn([]pendingProduce{{}})
	if spread != -1 || len(got) != 1 || got[0] != nil {
		t.Fatalf("spread %v, results %v; want -1 and none taken", spread, got)
	}
}
