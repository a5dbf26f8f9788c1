package server

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Many callers at once share few barriers, and every caller's barrier
// starts after it came.
func TestBarriersCoalesce(t *testing.T) {
	var bs barriers
	var runs atomic.Int64
	var lastStart atomic.Int64
	run := func() *kerr.Error {
		runs.Add(1)
		lastStart.Store(time.Now().UnixNano())
		time.Sleep(5 * time.Millisecond)
		return nil
	}
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			came := time.Now().UnixNano()
			if err := bs.wait(run); err != nil {
				t.Error(err)
			}
			if lastStart.Load() < came {
				t.Error("a caller was answered by a barrier that started before it came")
			}
		})
	}
	wg.Wait()
	if n := runs.Load(); n == 0 || n > 20 {
		t.Fatalf("200 callers ran %d barriers, want a few", n)
	}
	if err := bs.wait(func() *kerr.Error { return kerr.NotEnoughReplicas }); err != kerr.NotEnoughReplicas {
		t.Fatalf("a failed barrier answered %v", err)
	}
}
