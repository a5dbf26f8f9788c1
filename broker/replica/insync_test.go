package replica

import (
	"testing"
	"time"
)

// A follower is in sync while it reached the leader's log end of the
// previous probe within the lag window; a leader new to a partition counts
// its followers in sync for one window.
func TestFollowerProgress(t *testing.T) {
	const lag = time.Second
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	var f followerProgress
	f.update(at(0), map[uint64]int64{7: 100}, nil)
	steps := []struct {
		name      string
		now       time.Duration
		leaderEnd int64
		ends      map[int32]int64 // follower log ends answered this round
		inSync    map[int32]bool  // asked right after the round
	}{
		{"new leader: one window of grace", 500 * time.Millisecond, 100, map[int32]int64{1: 50}, map[int32]bool{1: true, 2: true}},
		{"follower 1 reached the previous end, 2 did not answer", 1500 * time.Millisecond, 200, map[int32]int64{1: 100}, map[int32]bool{1: true, 2: false}},
		{"behind the previous end is not caught up", 2000 * time.Millisecond, 300, map[int32]int64{1: 150, 2: 300}, map[int32]bool{1: true, 2: true}},
		{"follower 1 still behind after the window", 2600 * time.Millisecond, 300, map[int32]int64{1: 299, 2: 300}, map[int32]bool{1: false, 2: true}},
		{"idle partition: equal ends are caught up", 3000 * time.Millisecond, 300, map[int32]int64{1: 300, 2: 300}, map[int32]bool{1: true, 2: true}},
	}
	for i, s := range steps {
		ends := map[uint64]map[int32]int64{7: s.ends}
		f.update(at(s.now), map[uint64]int64{7: s.leaderEnd}, ends)
		for id, want := range s.inSync {
			if got := f.inSync(at(s.now), 7, id, lag); got != want {
				t.Fatalf("%s: follower %d in sync %v, want %v", s.name, id, got, want)
			}
			// Leadership goes back only to a follower seen caught up:
			// the grace of a new leader does not count.
			if seen := f.seenCaughtUp(at(s.now), 7, id, lag); seen != (want && i > 0) {
				t.Fatalf("%s: follower %d seen caught up %v", s.name, id, seen)
			}
		}
	}
	// A partition no longer led is forgotten; led again, it gets a new
	// window of grace.
	f.update(at(4*time.Second), map[uint64]int64{}, nil)
	f.update(at(10*time.Second), map[uint64]int64{7: 300}, nil)
	if !f.inSync(at(10*time.Second), 7, 1, lag) {
		t.Fatal("a partition led anew counts its followers out of sync at once")
	}
}
