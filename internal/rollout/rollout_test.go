package rollout

import "testing"

func TestNextRestart(t *testing.T) {
	up := func(ord int32, rev string) Pod { return Pod{Ordinal: ord, Ready: true, Revision: rev} }
	cases := []struct {
		name    string
		pods    []Pod
		want    int32
		restart bool
		wait    bool
	}{
		{"all current", []Pod{up(0, "new"), up(1, "new"), up(2, "new")}, 0, false, false},
		{"highest outdated first", []Pod{up(0, "old"), up(1, "old"), up(2, "old")}, 2, true, false},
		{"continues downwards", []Pod{up(0, "old"), up(1, "old"), up(2, "new")}, 1, true, false},
		{"waits for the restarted broker", []Pod{up(0, "old"), up(1, "old"), {Ordinal: 2, Ready: false, Revision: "new"}}, 0, false, true},
		{"waits while one terminates", []Pod{up(0, "old"), up(1, "old"), {Ordinal: 2, Ready: true, Terminating: true, Revision: "old"}}, 0, false, true},
		{"waits for a missing pod", []Pod{up(0, "old"), up(2, "old")}, 0, false, true},
		{"ignores pods being scaled away", []Pod{up(0, "new"), up(1, "new"), up(2, "new"), up(3, "old")}, 0, false, false},
	}
	for _, c := range cases {
		got, restart, wait := NextRestart(c.pods, 3, "new")
		if got != c.want || restart != c.restart || (wait != "") != c.wait {
			t.Errorf("%s: got %d restart=%v wait=%q", c.name, got, restart, wait)
		}
	}
}

func TestScaleIn(t *testing.T) {
	cases := []struct {
		name             string
		desired, current int32
		hosted           map[int32]int
		want             int32
		blocked          bool
	}{
		{"scale out", 5, 3, nil, 5, false},
		{"empty brokers go", 3, 5, map[int32]int{0: 4, 1: 4, 2: 4}, 3, false},
		{"a loaded broker stays", 3, 5, map[int32]int{0: 4, 3: 2}, 4, true},
		{"the highest loaded broker sets the floor", 3, 5, map[int32]int{4: 1}, 5, true},
		{"metadata voters stay", 2, 5, nil, 3, true},
		{"a cluster of one voter shrinks to one", 1, 3, nil, 1, false},
	}
	for _, c := range cases {
		voters := int32(3)
		if c.desired == 1 {
			voters = 1
		}
		got, blocked := ScaleIn(c.desired, c.current, voters, c.hosted)
		if got != c.want || (blocked != "") != c.blocked {
			t.Errorf("%s: got %d blocked=%q", c.name, got, blocked)
		}
	}
}
