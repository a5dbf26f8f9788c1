package throttle

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	p := Policy{Min: 1 << 20, Max: 64 << 20, Start: 4 << 20, Slower: 0.2, MinRequests: 50}
	ms := time.Millisecond
	rest := func(mean time.Duration) Window { return Window{Requests: 100, Mean: mean} }
	catching := func(mean time.Duration) Window { return Window{Catching: true, Requests: 100, Mean: mean} }
	began := catching(40 * ms) // partly at rest: judged by nothing
	moving := State{Catching: true}
	for _, tc := range []struct {
		name     string
		start    State
		windows  []Window
		wantRate int64
		wantRest time.Duration
	}{
		{name: "a first window at rest sets the latency at rest and the starting rate", windows: []Window{rest(4 * ms)},
			wantRate: 4 << 20, wantRest: 4 * ms},
		{name: "the last window at rest is the latency at rest, however different from before", windows: []Window{rest(260 * ms), rest(2 * ms)},
			wantRate: 4 << 20, wantRest: 2 * ms},
		{name: "a window at rest with too few requests teaches nothing", windows: []Window{rest(4 * ms), {Requests: 10, Mean: 40 * ms}},
			wantRate: 4 << 20, wantRest: 4 * ms},
		{name: "the window in which copies began keeps the rate", windows: []Window{rest(4 * ms), began},
			wantRate: 4 << 20, wantRest: 4 * ms},
		{name: "producers 1.5x slower halve the rate", windows: []Window{rest(4 * ms), began, catching(6 * ms)},
			wantRate: 2 << 20, wantRest: 4 * ms},
		{name: "each slow window halves it again, down to the minimum", windows: []Window{rest(4 * ms), began, catching(9 * ms), catching(9 * ms), catching(9 * ms)},
			wantRate: 1 << 20, wantRest: 4 * ms},
		{name: "until producers are slowed, each window within a tenth doubles it", windows: []Window{rest(4 * ms), began, catching(4 * ms), catching(4 * ms)},
			wantRate: 16 << 20, wantRest: 4 * ms},
		{name: "once they were slowed, a window within a tenth raises it by a quarter", windows: []Window{rest(4 * ms), began, catching(4 * ms), catching(9 * ms), catching(4 * ms)},
			wantRate: 5 << 20, wantRest: 4 * ms},
		{name: "between a tenth and a fifth slower keeps it", windows: []Window{rest(4 * ms), began, catching(4*ms + 600*time.Microsecond)},
			wantRate: 4 << 20, wantRest: 4 * ms},
		{name: "a bulk load at rest before the move does not hide the slowdown of a light one", windows: []Window{rest(260 * ms), rest(2 * ms), began, catching(3 * ms)},
			wantRate: 2 << 20, wantRest: 2 * ms},
		{name: "catching up learns nothing of the rest latency, and a move's end sets the starting rate back", windows: []Window{rest(4 * ms), began, catching(40 * ms), rest(4 * ms)},
			wantRate: 4 << 20, wantRest: 4 * ms},
		{name: "without a latency at rest the rate is kept", start: moving, windows: []Window{catching(40 * ms)},
			wantRate: 4 << 20},
		{name: "too few requests while catching up keep the rate", windows: []Window{rest(4 * ms), began, {Catching: true, Requests: 3, Mean: time.Second}},
			wantRate: 4 << 20, wantRest: 4 * ms},
		{name: "with few producers, none seen at rest, the rate is raised", start: moving, windows: []Window{{Catching: true, Requests: 3, Mean: ms}},
			wantRate: 8 << 20},
		{name: "without a produce request the rate is raised, producers seen at rest or not", windows: []Window{rest(4 * ms), began, {Catching: true}},
			wantRate: 8 << 20, wantRest: 4 * ms},
		{name: "the maximum caps a doubling", start: State{Rate: 60 << 20, Catching: true}, windows: []Window{{Catching: true}},
			wantRate: 64 << 20},
		{name: "a rate in force is where it carries on", start: State{Rate: 2 << 20, Rest: 4 * ms, Catching: true, SlowedAt: 4 << 20}, windows: []Window{catching(4 * ms)},
			wantRate: 2<<20 + 2<<18, wantRest: 4 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.start
			for _, w := range tc.windows {
				st = Decide(w, st, p)
			}
			if st.Rate != tc.wantRate || st.Rest != tc.wantRest {
				t.Errorf("rate %d, rest %v (%s); want rate %d, rest %v", st.Rate, st.Rest, st.Reason, tc.wantRate, tc.wantRest)
			}
		})
	}
}

// TestEachMoveStartsSlow: a move that found its producers' bound does
// not leave the next move to creep up by quarters from the start.
func TestEachMoveStartsSlow(t *testing.T) {
	p := Policy{Min: 1 << 20, Max: 64 << 20, Start: 4 << 20, Slower: 0.2, MinRequests: 50}
	ms := time.Millisecond
	var st State
	for _, w := range []Window{{Requests: 100, Mean: 4 * ms}, {Catching: true}, {Catching: true, Requests: 100, Mean: 9 * ms},
		{Requests: 100, Mean: 4 * ms}, {Catching: true}, {Catching: true, Requests: 100, Mean: 4 * ms}} {
		st = Decide(w, st, p)
	}
	if st.Rate != 8<<20 || st.SlowedAt != 0 {
		t.Fatalf("the second move: rate %d, slowed at %d (%s); want 8 MiB/s, doubling", st.Rate, st.SlowedAt, st.Reason)
	}
}
