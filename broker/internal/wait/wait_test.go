package wait

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A change wakes the loop well before its interval, and the end of the
// context ends it.
func TestOnChangeRunsAtChanges(t *testing.T) {
	var mu sync.Mutex
	next := make(chan struct{})
	changed := func() <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		return next
	}
	change := func() {
		mu.Lock()
		defer mu.Unlock()
		close(next)
		next = make(chan struct{})
	}
	var passes atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		OnChange(ctx, changed, time.Millisecond, time.Hour, func() { passes.Add(1) })
	}()
	for want := int64(1); want <= 3; want++ {
		for deadline := time.Now().Add(5 * time.Second); passes.Load() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("%d passes, want %d", passes.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
		change()
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop outlived its context")
	}
}
