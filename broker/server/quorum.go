package server

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/meta"
)

// quorum changes and describes the metadata group's voters, as Kafka's
// dynamic KRaft quorum does (KIP-853: AddRaftVoter, RemoveRaftVoter,
// DescribeQuorum). A broker joins the metadata group as an observer
// unless it is a voter; a voter is added by promoting its observer, one
// at a time, once it runs; a voter is removed only from a broker that is
// leaving: it holds no partition replica, since without a node in the
// metadata group it no longer learns where replicas go. The voters are
// recorded in the metadata (meta.SetMetadataVoters) before the Raft
// membership changes, so that a change cut short, or a voter that comes
// back on an empty disk, is completed in the role the record gives.
type quorum struct{ b *Broker }

// quorumMember is one broker's node in the metadata group.
type quorumMember struct {
	broker      int32
	incarnation [16]byte
}

// quorumView is the metadata group as this broker sees it.
type quorumView struct {
	leader  int32 // -1 if unknown
	term    int32
	applied uint64
	voters  []quorumMember
	// observers are the registered brokers whose current node follows the
	// group without a vote.
	observers []quorumMember
	brokers   map[int32]meta.Broker
}

func (q quorum) describe(ctx context.Context) (quorumView, error) {
	b := q.b
	mem, err := b.nh.SyncGetClusterMembership(ctx, meta.MetadataShard)
	if err != nil {
		return quorumView{}, err
	}
	v := quorumView{leader: -1, term: b.leaders.term(meta.MetadataShard), applied: b.meta.Applied(), brokers: map[int32]meta.Broker{}}
	if id, ok := b.metaLeader(); ok {
		v.leader = id
	}
	b.meta.Read(func(s *meta.State) {
		for _, br := range s.Brokers() {
			v.brokers[br.ID] = br
		}
	})
	member := func(n uint64) quorumMember {
		id := meta.BrokerOfNode(n)
		m := quorumMember{broker: id}
		if br, ok := v.brokers[id]; ok && br.Node() == n {
			m.incarnation = incarnationKey(br.Incarnation)
		}
		return m
	}
	for n := range mem.Nodes {
		v.voters = append(v.voters, member(n))
	}
	for n := range mem.Observers {
		if br, ok := v.brokers[meta.BrokerOfNode(n)]; ok && br.Node() == n {
			v.observers = append(v.observers, member(n))
		}
	}
	byBroker := func(a, c quorumMember) int { return int(a.broker - c.broker) }
	slices.SortFunc(v.voters, byBroker)
	slices.SortFunc(v.observers, byBroker)
	return v, nil
}

// incarnationKey is an incarnation as Kafka's 16-byte directory id: the
// voter key that tells a broker's incarnations apart.
func incarnationKey(incarnation string) [16]byte {
	var key [16]byte
	if raw, err := hex.DecodeString(incarnation); err == nil && len(raw) == len(key) {
		copy(key[:], raw)
	}
	return key
}

// voterChange is one AddRaftVoter or RemoveRaftVoter request.
type voterChange struct {
	clusterID *string
	broker    int32
	key       [16]byte // zero: any incarnation
}

// target refuses a change addressed to another cluster or to an
// incarnation the broker no longer is, and returns the broker as
// recorded and the group's membership as it stands.
func (q quorum) target(ctx context.Context, c voterChange) (meta.Broker, *dragonboat.Membership, *kerr.Error, string) {
	var br meta.Broker
	var known bool
	var cluster string
	q.b.meta.Read(func(s *meta.State) {
		br, known = s.Broker(c.broker)
		cluster = s.ClusterID()
	})
	switch {
	case c.clusterID != nil && *c.clusterID != "" && *c.clusterID != cluster:
		return br, nil, kerr.InconsistentClusterID, fmt.Sprintf("this is cluster %q, not %q", cluster, *c.clusterID)
	case !known:
		return br, nil, kerr.VoterNotFound, fmt.Sprintf("broker %d is not registered", c.broker)
	case c.key != [16]byte{} && c.key != incarnationKey(br.Incarnation):
		return br, nil, kerr.InvalidVoterKey, fmt.Sprintf("broker %d runs as incarnation %s now, not the directory id given", c.broker, br.Incarnation)
	}
	mem, err := q.b.nh.SyncGetClusterMembership(ctx, meta.MetadataShard)
	if err != nil {
		return br, nil, kerr.RequestTimedOut, "the metadata group did not answer: " + err.Error()
	}
	return br, mem, nil, ""
}

// addVoter promotes a running broker's observer to a voter.
func (q quorum) addVoter(ctx context.Context, c voterChange) (*kerr.Error, string) {
	b := q.b
	br, mem, code, msg := q.target(ctx, c)
	if code != nil {
		return code, msg
	}
	node := br.Node()
	_, voting := mem.Nodes[node]
	recorded := false
	b.meta.Read(func(s *meta.State) { recorded = s.VotesInMetadata(c.broker, b.cfg.MetadataVoters) })
	if voting && recorded {
		return kerr.DuplicateVoter, fmt.Sprintf("broker %d already votes in the metadata group", c.broker)
	}
	if _, following := mem.Observers[node]; !following && !voting {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d has not joined the metadata group yet: start it first", c.broker)
	}
	if !q.waitLive(ctx, c.broker) {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d does not answer: a voter that cannot vote would only weaken the quorum", c.broker)
	}
	if code, msg := q.record(ctx, votingBrokers(mem.Nodes), c.broker, true); code != nil {
		return code, msg
	}
	if !voting {
		if err := b.nh.SyncRequestAddNode(ctx, meta.MetadataShard, node, br.RaftAddr, mem.ConfigChangeID); err != nil {
			return kerr.RequestTimedOut, "the metadata group did not take the new voter: " + err.Error()
		}
	}
	b.log.Info("metadata voter added", "voter", c.broker, "generation", br.Generation)
	return nil, ""
}

// waitLive gives the liveness probes a window to see a broker that just
// started.
func (q quorum) waitLive(ctx context.Context, id int32) bool {
	for deadline := time.Now().Add(livenessWindow); !q.b.liveness.isLive(id); {
		if time.Now().After(deadline) || !sleep(ctx, livenessInterval) {
			return false
		}
	}
	return true
}

// removeVoter removes a leaving broker's node from the metadata group.
// Refused while the broker hosts partition replicas, for the last voter,
// and when the voters left would not have a live majority: the group
// could then take no change, the next voter change included.
func (q quorum) removeVoter(ctx context.Context, c voterChange) (*kerr.Error, string) {
	b := q.b
	br, mem, code, msg := q.target(ctx, c)
	if code != nil {
		return code, msg
	}
	node := br.Node()
	if _, voting := mem.Nodes[node]; !voting {
		return kerr.VoterNotFound, fmt.Sprintf("broker %d does not vote in the metadata group", c.broker)
	}
	hosts := false
	b.meta.Read(func(s *meta.State) { hosts = s.HostsReplicas(c.broker) })
	if hosts {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d hosts partition replicas: move them to other brokers first, since a broker outside the metadata group no longer learns where replicas go", c.broker)
	}
	// Probed now rather than as the periodic probes last saw them: a voter
	// that stopped a moment ago would be counted for a second more.
	left := slices.DeleteFunc(votingBrokers(mem.Nodes), func(id int32) bool { return id == c.broker })
	live := 0
	for _, id := range left {
		peer, _ := b.meta.Broker(id)
		if id == b.cfg.ID || (peer.RaftAddr != "" && b.liveness.probe(peer)) {
			live++
		}
	}
	if len(left) == 0 {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d is the metadata group's last voter", c.broker)
	}
	if live <= len(left)/2 {
		return kerr.InvalidRequest, fmt.Sprintf("without broker %d, %d of the %d voters left answer: the metadata group would have no quorum", c.broker, live, len(left))
	}
	if code, msg := q.record(ctx, left, c.broker, false); code != nil {
		return code, msg
	}
	if err := b.nh.SyncRequestDeleteNode(ctx, meta.MetadataShard, node, mem.ConfigChangeID); err != nil {
		return kerr.RequestTimedOut, "the metadata group did not remove the voter: " + err.Error()
	}
	b.log.Warn("metadata voter removed: the broker no longer follows the metadata", "voter", c.broker, "generation", br.Generation)
	return nil, ""
}

// votingBrokers are the brokers whose nodes vote in the group.
func votingBrokers(nodes map[uint64]string) []int32 {
	out := make([]int32, 0, len(nodes))
	for n := range nodes {
		out = append(out, meta.BrokerOfNode(n))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// record proposes the voters with broker added to or taken from current.
func (q quorum) record(ctx context.Context, current []int32, broker int32, add bool) (*kerr.Error, string) {
	voters := slices.DeleteFunc(slices.Clone(current), func(id int32) bool { return id == broker })
	if add {
		voters = append(voters, broker)
	}
	out, err := q.b.proposeMeta(ctx, &meta.Command{SetMetadataVoters: &meta.SetMetadataVoters{Voters: voters}})
	switch {
	case err != nil:
		return kerr.RequestTimedOut, "the metadata group did not record the voters: " + err.Error()
	case out.Err != nil:
		return kafkaError(out.Err, kerr.UnknownServerError), "the metadata group refused the voters: " + out.Err.Error()
	}
	return nil, ""
}
