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
		voting           []int32
		hosted           map[int32]int
		want             int32
		blocked          bool
	}{
		{"scale out", 5, 3, []int32{0, 1, 2}, nil, 5, false},
		{"empty brokers go", 3, 5, []int32{0, 1, 2}, map[int32]int{0: 4, 1: 4, 2: 4}, 3, false},
		{"a loaded broker stays", 3, 5, []int32{0, 1, 2}, map[int32]int{0: 4, 3: 2}, 4, true},
		{"the highest loaded broker sets the floor", 3, 5, []int32{0, 1, 2}, map[int32]int{4: 1}, 5, true},
		{"a voter stays until it left the group", 2, 5, []int32{0, 1, 2}, nil, 3, true},
		{"a voter that left goes", 2, 3, []int32{0, 1}, nil, 2, false},
		{"a cluster of one voter shrinks to one", 1, 3, []int32{0}, nil, 1, false},
	}
	for _, c := range cases {
		got, blocked := ScaleIn(c.desired, c.current, c.voting, c.hosted)
		if got != c.want || (blocked != "") != c.blocked {
			t.Errorf("%s: got %d blocked=%q", c.name, got, blocked)
		}
	}
}

func TestNextVoterChange(t *testing.T) {
	cases := []struct {
		name              string
		replicas          int32
		voters, observers []int32
		hosted            map[int32]int
		want              VoterChange
		change            bool
	}{
		{"settled at three", 5, []int32{0, 1, 2}, []int32{3, 4}, nil, VoterChange{}, false},
		{"a cluster founded with one grows its quorum", 3, []int32{0}, []int32{1, 2}, nil, VoterChange{Broker: 1, Add: true}, true},
		{"then to three", 3, []int32{0, 1}, []int32{2}, nil, VoterChange{Broker: 2, Add: true}, true},
		{"two brokers have two voters", 2, []int32{0}, []int32{1}, nil, VoterChange{Broker: 1, Add: true}, true},
		{"an observer not yet joined is waited for", 3, []int32{0, 1}, nil, nil, VoterChange{}, false},
		{"a leaving voter holding replicas stays", 2, []int32{0, 1, 2}, nil, map[int32]int{2: 1}, VoterChange{}, false},
		{"a drained leaving voter goes", 2, []int32{0, 1, 2}, nil, map[int32]int{0: 3, 1: 3}, VoterChange{Broker: 2}, true},
		{"the highest leaving voter first", 1, []int32{0, 1, 2}, nil, nil, VoterChange{Broker: 2}, true},
		{"a leaving observer is no voter's business", 3, []int32{0, 1, 2}, []int32{3, 4}, nil, VoterChange{}, false},
		{"a kept observer is added before a leaving voter goes", 3, []int32{0, 1, 4}, []int32{2}, nil, VoterChange{Broker: 2, Add: true}, true},
		{"then the leaving voter goes", 3, []int32{0, 1, 2, 4}, nil, nil, VoterChange{Broker: 4}, true},
		{"the last voter stays", 0, []int32{0}, nil, nil, VoterChange{}, false},
		{"voters added by hand stay", 5, []int32{0, 1, 2, 3}, []int32{4}, nil, VoterChange{}, false},
	}
	for _, c := range cases {
		got, change := NextVoterChange(c.replicas, 3, c.voters, c.observers, c.hosted)
		if got != c.want || change != c.change {
			t.Errorf("%s: got %+v %v, want %+v %v", c.name, got, change, c.want, c.change)
		}
	}
}

func TestTransportMoves(t *testing.T) {
	pod := func(ord int32, transport string, terminating bool) Pod {
		return Pod{Ordinal: ord, Ready: true, Revision: "r", Transport: transport, Terminating: terminating}
	}
	for _, c := range []struct {
		name string
		pods []Pod
		want []int32
	}{
		{"all on it", []Pod{pod(0, "tls", false), pod(1, "tls", false), pod(2, "tls", false)}, nil},
		{"all at once, whatever their readiness", []Pod{pod(0, "plain", false), {Ordinal: 1, Transport: "plain"}, pod(2, "plain", false)}, []int32{0, 1, 2}},
		{"the rest of a move", []Pod{pod(0, "tls", false), pod(1, "plain", false), pod(2, "plain", true)}, []int32{1}},
	} {
		got := TransportMoves(c.pods, "tls")
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
}
