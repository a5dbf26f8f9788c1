package server

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Many callers at once share few barriers, and every caller's barrier
// starts after it came.
func TestBarriersCoalesce(t *testing.T) {
	var bs barriers
	var mu sync.Mutex
	type span struct{ start, end time.Time }
	var ran []span // every run of a barrier, in order (runs do not overlap)
	run := func() *kerr.Error {
		start := time.Now()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		ran = append(ran, span{start, time.Now()})
		mu.Unlock()
		return nil
	}
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			came := time.Now()
			if err := bs.wait(run); err != nil {
				t.Error(err)
			}
			answered := time.Now()
			// Some run began after the caller came and ended before it
			// was answered: a barrier already running when it came
			// proves nothing of the writes it must see.
			mu.Lock()
			defer mu.Unlock()
			if !slices.ContainsFunc(ran, func(s span) bool { return !s.start.Before(came) && !s.end.After(answered) }) {
				t.Error("a caller was answered without a barrier run wholly after it came")
			}
		})
	}
	wg.Wait()
	if n := len(ran); n == 0 || n > 20 {
		t.Fatalf("200 callers ran %d barriers, want a few", n)
	}
	if err := bs.wait(func() *kerr.Error { return kerr.NotEnoughReplicas }); err != kerr.NotEnoughReplicas {
		t.Fatalf("a failed barrier answered %v", err)
	}
}
