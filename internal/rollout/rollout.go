// Package rollout holds the BrokerCluster's decisions as pure functions:
// which broker to restart next in a rolling update, how far the
// StatefulSet may scale in, and how the metadata group's voters follow the
// cluster's size.
package rollout

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Pod is a broker pod as the decisions need it.
type Pod struct {
	Ordinal     int32
	Ready       bool
	Terminating bool
	// Revision is the pod's controller-revision-hash.
	Revision string
	// Transport is how the pod's broker speaks to the others
	// (specs.Transport).
	Transport string
}

// TransportMoves are the brokers to restart now, all at once, to move the
// cluster onto another transport: every pod still running another than
// want. Brokers of two transports cannot speak to each other, so a
// broker restarted alone onto the new one could not catch up, and a
// rolling update would wait for it for ever; restarted together they form
// the cluster again on their data.
func TransportMoves(pods []Pod, want string) []int32 {
	var moves []int32
	for _, p := range pods {
		if !p.Terminating && p.Transport != want {
			moves = append(moves, p.Ordinal)
		}
	}
	return moves
}

// NextRestart picks the broker to restart now in a rolling update to
// updateRevision: only while every broker is up and ready, one at a time,
// the highest ordinal first (as a StatefulSet rolls). wait says why none
// is picked while pods are still outdated.
func NextRestart(pods []Pod, replicas int32, updateRevision string) (ordinal int32, restart bool, wait string) {
	outdated := []int32{}
	present := map[int32]bool{}
	for _, p := range pods {
		present[p.Ordinal] = true
		if p.Terminating {
			return 0, false, fmt.Sprintf("broker %d is restarting", p.Ordinal)
		}
		if p.Revision != updateRevision && p.Ordinal < replicas {
			outdated = append(outdated, p.Ordinal)
		}
	}
	if len(outdated) == 0 {
		return 0, false, ""
	}
	for i := int32(0); i < replicas; i++ {
		if !present[i] {
			return 0, false, fmt.Sprintf("broker %d is not running", i)
		}
	}
	for _, p := range pods {
		if p.Ordinal < replicas && !p.Ready {
			return 0, false, fmt.Sprintf("broker %d is not ready", p.Ordinal)
		}
	}
	sort.Slice(outdated, func(i, j int) bool { return outdated[i] > outdated[j] })
	return outdated[0], true, ""
}

// ScaleIn returns the replicas the StatefulSet may have: the desired count,
// unless a broker that would be removed still hosts partition replicas,
// which would lose them, or still votes in the metadata group, whose
// quorum counts it until NextVoterChange removes it; blocked then says
// which.
func ScaleIn(desired, current int32, voting []int32, hosted map[int32]int) (replicas int32, blocked string) {
	if desired >= current {
		return desired, ""
	}
	var holding []string
	allowed := desired
	for id := current - 1; id >= desired; id-- {
		var why []string
		if n := hosted[id]; n > 0 {
			why = append(why, fmt.Sprintf("hosts %d partition replicas", n))
		}
		if slices.Contains(voting, id) {
			why = append(why, "votes in the metadata group")
		}
		if len(why) > 0 {
			holding = append(holding, fmt.Sprintf("broker %d %s", id, strings.Join(why, " and ")))
			allowed = max(allowed, id+1)
		}
	}
	if len(holding) == 0 {
		return desired, ""
	}
	return allowed, "scale-in waits: " + strings.Join(holding, "; ") + " (its replicas move first, then it leaves the metadata group)"
}

// VoterChange is one change of the metadata group's voters: a broker
// added (AddRaftVoter) or removed (RemoveRaftVoter).
type VoterChange struct {
	Broker int32
	Add    bool
}

// NextVoterChange picks the next change that brings the metadata group to
// min(replicas, maxVoters) voters among the brokers the cluster keeps (ids
// below replicas), one at a time as Raft changes membership. While the
// kept voters are fewer, the lowest kept observer is added, so that a
// cluster founded small gains a fault-tolerant quorum as it grows, and a
// replacement joins before a leaving voter goes (the quorum never shrinks
// on the way). Else a voter that is leaving is removed, the highest
// first, once it hosts no partition replica (it could no longer follow
// where they go). Voters beyond the count that a person added by hand
// among the kept brokers stay. ok is false when nothing is to change.
func NextVoterChange(replicas, maxVoters int32, voters, observers []int32, hosted map[int32]int) (VoterChange, bool) {
	leaving := slices.DeleteFunc(slices.Clone(voters), func(id int32) bool { return id < replicas })
	slices.Sort(leaving)
	candidates := slices.DeleteFunc(slices.Clone(observers), func(id int32) bool { return id >= replicas || slices.Contains(voters, id) })
	if kept := len(voters) - len(leaving); int32(kept) < min(replicas, maxVoters) && len(candidates) > 0 {
		return VoterChange{Broker: slices.Min(candidates), Add: true}, true
	}
	if len(leaving) > 0 && len(voters) > 1 {
		if id := leaving[len(leaving)-1]; hosted[id] == 0 {
			return VoterChange{Broker: id}, true
		}
	}
	return VoterChange{}, false
}
