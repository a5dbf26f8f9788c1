package throttle

import "time"

// Window is one measurement window of the brokers' acknowledged produce
// requests: their count and mean latency, all brokers together.
type Window struct {
	// Catching: replicas were catching up during the window.
	Catching bool
	Requests int64
	Mean     time.Duration
}

// State is what Decide carries from one window to the next.
type State struct {
	// Rest is the mean produce latency while nothing catches up, a moving
	// average; 0 until a window at rest had enough requests.
	Rest time.Duration
	// Rate is the throttle in force, bytes per second.
	Rate int64
	// Reason says why Rate is what it is, for the status and Events.
	Reason string
}

// Policy bounds the choice.
type Policy struct {
	// Min and Max bound Rate; Start is where a first move starts.
	Min, Max, Start int64
	// Slower is how much slower than at rest producers may get: a
	// closed-loop producer's rate falls as its latency rises, so 0.2 keeps
	// it at about 1/1.2 = 0.83x its rate at rest.
	Slower float64
	// MinRequests is the fewest requests a window needs to count.
	MinRequests int64
}

// DefaultPolicy keeps producers at about 0.8x their rate at rest or
// better, between 1 MiB/s and 1 GiB/s per broker, starting at 20 MiB/s
// (which kept 0.67x in the scale-out benchmark; the rule then finds the
// rate that keeps 0.8x on the cluster at hand).
var DefaultPolicy = Policy{Min: 1 << 20, Max: 1 << 30, Start: 20 << 20, Slower: 0.2, MinRequests: 50}

// restWeight is the weight of a new window at rest in the moving average.
const restWeight = 0.3

// Decide returns the state after window w. At rest it learns the
// producers' latency; while replicas catch up it halves the rate when
// producers are slower than Policy.Slower allows, and raises it by a
// quarter when they are well within it (additive increase would take
// minutes to find a rate a thousand times the minimum).
func Decide(w Window, st State, p Policy) State {
	if st.Rate == 0 {
		st.Rate, st.Reason = p.Start, "starting rate"
	}
	enough := w.Requests >= p.MinRequests && w.Mean > 0
	switch {
	case !w.Catching && enough:
		if st.Rest == 0 {
			st.Rest = w.Mean
		} else {
			st.Rest = time.Duration(restWeight*float64(w.Mean) + (1-restWeight)*float64(st.Rest))
		}
		return st
	case !w.Catching:
		return st
	case !enough && st.Rest == 0:
		// No producer seen at rest or now: none for the copies to slow.
		st.Rate = min(p.Max, st.Rate+st.Rate/4)
		st.Reason = "no producers to slow: rate raised"
		return st
	case !enough:
		// Producers were seen at rest: few requests now may be theirs,
		// slowed, so the rate is not raised on them.
		st.Reason = "too few produce requests to measure: rate kept"
		return st
	case st.Rest == 0:
		st.Reason = "no produce latency at rest measured yet: rate kept"
		return st
	}
	ratio := float64(w.Mean) / float64(st.Rest)
	switch {
	case ratio > 1+p.Slower:
		st.Rate = max(p.Min, st.Rate/2)
		st.Reason = "producers slowed by the copies: rate halved"
	case ratio < 1+p.Slower/2:
		st.Rate = min(p.Max, st.Rate+st.Rate/4)
		st.Reason = "producers keep their pace: rate raised"
	default:
		st.Reason = "producers near the bound: rate kept"
	}
	return st
}
