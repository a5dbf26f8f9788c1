// Package rollout holds the BrokerCluster's decisions as pure functions:
// which broker to restart next in a rolling update, and how far the
// StatefulSet may scale in.
package rollout

import (
	"fmt"
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
// which would lose them, or votes in the metadata group (the first voters
// brokers); blocked then says which.
func ScaleIn(desired, current, voters int32, hosted map[int32]int) (replicas int32, blocked string) {
	if desired >= current {
		return desired, ""
	}
	var holding []string
	allowed := desired
	if desired < voters {
		allowed = min(voters, current)
		holding = append(holding, fmt.Sprintf("the first %d brokers vote in the metadata group, and a cluster does not shrink below them", voters))
	}
	for id := current - 1; id >= desired; id-- {
		if n := hosted[id]; n > 0 {
			holding = append([]string{fmt.Sprintf("broker %d hosts %d partition replicas", id, n)}, holding...)
			if id+1 > allowed {
				allowed = id + 1
			}
		}
	}
	if len(holding) == 0 {
		return desired, ""
	}
	return allowed, "scale-in waits: " + strings.Join(holding, "; ") + " (delete or move those topics first)"
}
