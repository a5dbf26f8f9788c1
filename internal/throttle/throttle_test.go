package throttle

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	p := Policy{Min: 1 << 20, Max: 64 << 20, Start: 16 << 20, Slower: 0.2, MinRequests: 50}
	ms := time.Millisecond
	rest := func(mean time.Duration) Window { return Window{Requests: 100, Mean: mean} }
	catching := func(mean time.Duration) Window { return Window{Catching: true, Requests: 100, Mean: mean} }
	for _, tc := range []struct {
		name     string
		start    State
		windows  []Window
		wantRate int64
		wantRest time.Duration
	}{
		{name: "a first window at rest sets the latency at rest and the starting rate", windows: []Window{rest(4 * ms)},
			wantRate: 16 << 20, wantRest: 4 * ms},
		{name: "later windows at rest move the average by 0.3 of the difference", windows: []Window{rest(4 * ms), rest(14 * ms)},
			wantRate: 16 << 20, wantRest: 7 * ms},
		{name: "a window at rest with too few requests teaches nothing", windows: []Window{rest(4 * ms), {Requests: 10, Mean: 40 * ms}},
			wantRate: 16 << 20, wantRest: 4 * ms},
		{name: "producers 1.5x slower halve the rate", windows: []Window{rest(4 * ms), catching(6 * ms)},
			wantRate: 8 << 20, wantRest: 4 * ms},
		{name: "each slow window halves it again, down to the minimum", windows: []Window{rest(4 * ms), catching(9 * ms), catching(9 * ms), catching(9 * ms), catching(9 * ms), catching(9 * ms)},
			wantRate: 1 << 20, wantRest: 4 * ms},
		{name: "producers within a tenth raise it by a quarter", windows: []Window{rest(4 * ms), catching(4 * ms)},
			wantRate: 20 << 20, wantRest: 4 * ms},
		{name: "raised up to the maximum", windows: []Window{rest(4 * ms), catching(4 * ms), catching(4 * ms), catching(4 * ms), catching(4 * ms), catching(4 * ms), catching(4 * ms), catching(4 * ms)},
			wantRate: 64 << 20, wantRest: 4 * ms},
		{name: "between a tenth and a fifth slower keeps it", windows: []Window{rest(4 * ms), catching(4*ms + 600*time.Microsecond)},
			wantRate: 16 << 20, wantRest: 4 * ms},
		{name: "catching up learns nothing of the rest latency", windows: []Window{rest(4 * ms), catching(40 * ms), rest(4 * ms)},
			wantRate: 8 << 20, wantRest: 4 * ms},
		{name: "without a latency at rest the rate is kept", windows: []Window{catching(40 * ms)},
			wantRate: 16 << 20},
		{name: "too few requests while catching up keep the rate", windows: []Window{rest(4 * ms), {Catching: true, Requests: 3, Mean: time.Second}},
			wantRate: 16 << 20, wantRest: 4 * ms},
		{name: "without producers at rest or now the rate is raised", windows: []Window{{Requests: 2, Mean: ms}, {Catching: true}},
			wantRate: 20 << 20},
		{name: "a rate in force is where it carries on", start: State{Rate: 2 << 20, Rest: 4 * ms}, windows: []Window{catching(4 * ms)},
			wantRate: 2<<20 + 2<<18, wantRest: 4 * ms},
		{name: "the maximum caps a raise", start: State{Rate: 60 << 20, Rest: 4 * ms}, windows: []Window{catching(4 * ms)},
			wantRate: 64 << 20, wantRest: 4 * ms},
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
