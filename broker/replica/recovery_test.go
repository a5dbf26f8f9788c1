package replica

import "testing"

func TestChooseRecoverySource(t *testing.T) {
	cases := []struct {
		name   string
		states []replicaLogState
		want   int32
		ok     bool
	}{
		{"none", nil, 0, false},
		{"only observers", []replicaLogState{{Broker: 1, LastTerm: 9, LastIndex: 90}}, 0, false},
		{"higher last term wins over a longer log", []replicaLogState{
			{Broker: 1, Voter: true, LastTerm: 3, LastIndex: 500},
			{Broker: 2, Voter: true, LastTerm: 4, LastIndex: 120},
		}, 2, true},
		{"same term: the longer log", []replicaLogState{
			{Broker: 1, Voter: true, LastTerm: 4, LastIndex: 100},
			{Broker: 2, Voter: true, LastTerm: 4, LastIndex: 120},
		}, 2, true},
		{"an observer's longer log does not count", []replicaLogState{
			{Broker: 1, Voter: true, LastTerm: 4, LastIndex: 100},
			{Broker: 2, LastTerm: 5, LastIndex: 900},
		}, 1, true},
		{"a tie goes to the lower broker id", []replicaLogState{
			{Broker: 3, Voter: true, LastTerm: 4, LastIndex: 100},
			{Broker: 1, Voter: true, LastTerm: 4, LastIndex: 100},
		}, 1, true},
	}
	for _, c := range cases {
		got, ok := chooseRecoverySource(c.states)
		if ok != c.ok || (ok && got.Broker != c.want) {
			t.Errorf("%s: broker %d (%v), want %d (%v)", c.name, got.Broker, ok, c.want, c.ok)
		}
	}
}
