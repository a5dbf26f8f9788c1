package throttle

import (
	"fmt"
	"time"
)

// Window is one measurement window of the brokers' acknowledged produce
// requests: their count and mean latency, all brokers together.
type Window struct {
	// Catching: replicas were catching up when the window closed.
	Catching bool
	Requests int64
	Mean     time.Duration
}

// State is what Decide carries from one window to the next.
type State struct {
	// Rest is the mean produce latency of the last window at rest with
	// enough requests; 0 until one had them.
	Rest time.Duration
	// Rate is the throttle in force, bytes per second.
	Rate int64
	// Catching: the last window closed while replicas caught up.
	Catching bool
	// SlowedAt is the rate at which this move's copies last slowed the
	// producers; 0 until they did, while the rate still doubles (slow
	// start, as TCP's).
	SlowedAt int64
	// Reason says why Rate is what it is, for the status and Events.
	Reason string
}

// Policy bounds the choice.
type Policy struct {
	// Min and Max bound Rate; Start is where each move starts.
	Min, Max, Start int64
	// Slower is how much slower than at rest producers may get: a
	// closed-loop producer's rate falls as its latency rises, so 0.2 keeps
	// it at about 1/1.2 = 0.83x its rate at rest.
	Slower float64
	// MinRequests is the fewest requests a window needs to count.
	MinRequests int64
}

// DefaultPolicy keeps producers at about 0.8x their rate at rest or
// better, between 1 MiB/s and 1 GiB/s per broker. Each move starts at
// 4 MiB/s: the scale-out benchmark's 2-core machine kept 0.8x only near
// it, and doubling finds a rate 250 times higher within 40 s where
// producers allow it.
var DefaultPolicy = Policy{Min: 1 << 20, Max: 1 << 30, Start: 4 << 20, Slower: 0.2, MinRequests: 50}

// startingRate is the reason of Policy.Start.
const startingRate = "starting rate"

// Decide returns the state after window w. At rest it takes the
// producers' latency and sets the rate back to where the next move
// starts. While replicas catch up it halves the rate when producers are
// slower than Policy.Slower allows; when they are well within it, or
// nobody produces, it doubles the rate until the move first slowed them
// and then raises it by a quarter (additive increase would take minutes
// to find a rate a thousand times the minimum). The window in which
// copies began is partly at rest, and changes nothing.
func Decide(w Window, st State, p Policy) State {
	began := w.Catching && !st.Catching
	st.Catching = w.Catching
	enough := w.Requests >= p.MinRequests && w.Mean > 0
	if !w.Catching {
		if enough {
			// The last window, not an average: the copies compete with
			// the producers of now, and an average would carry a bulk
			// load's latency (a fill before a scale-out: 260 ms beside
			// 2.3 ms) into a judgement of light ones.
			st.Rest = w.Mean
		}
		st.Rate, st.SlowedAt, st.Reason = p.Start, 0, startingRate
		return st
	}
	if st.Rate == 0 {
		st.Rate, st.Reason = p.Start, startingRate
	}
	switch {
	case began:
		st.Reason = "copies began in this window: rate kept"
	case w.Requests == 0:
		// A producer the copies slowed would still finish requests in a
		// window of seconds.
		st.Reason = "no produce requests: rate " + st.raise(p)
	case !enough && st.Rest == 0:
		st.Reason = "no producers to slow: rate " + st.raise(p)
	case !enough:
		// Producers were seen at rest: few requests now may be theirs,
		// slowed, so the rate is not raised on them.
		st.Reason = "too few produce requests to measure: rate kept"
	case st.Rest == 0:
		st.Reason = "no produce latency at rest measured yet: rate kept"
	default:
		st.judge(w, p)
	}
	return st
}

// judge sets the rate from how much slower producers are than at rest.
func (st *State) judge(w Window, p Policy) {
	ratio := float64(w.Mean) / float64(st.Rest)
	var why, done string
	switch {
	case ratio > 1+p.Slower:
		st.SlowedAt, st.Rate = st.Rate, max(p.Min, st.Rate/2)
		why, done = "producers slowed by the copies", "halved"
	case ratio < 1+p.Slower/2:
		why, done = "producers keep their pace", st.raise(p)
	default:
		why, done = "producers near the bound", "kept"
	}
	st.Reason = fmt.Sprintf("%s (produce %s, %s at rest): rate %s", why, roundLatency(w.Mean), roundLatency(st.Rest), done)
}

// raise doubles the rate until the move first slowed producers, then
// raises it by a quarter, up to Policy.Max; it says which it did.
func (st *State) raise(p Policy) string {
	if st.SlowedAt == 0 {
		st.Rate = min(p.Max, st.Rate*2)
		return "doubled"
	}
	st.Rate = min(p.Max, st.Rate+st.Rate/4)
	return "raised"
}

// roundLatency rounds a latency for a reason: to 0.1 ms.
func roundLatency(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
