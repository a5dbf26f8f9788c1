package cluster

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/raftka/raftka/broker/internal/kafkaerr"

	"github.com/lni/dragonboat/v3"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
)

// Quorum changes and describes the metadata group's voters, as Kafka's
// dynamic KRaft quorum does (KIP-853: AddRaftVoter, RemoveRaftVoter,
// DescribeQuorum). A broker joins the metadata group as an observer
// unless it is a voter; a voter is added by promoting its observer, one
// at a time, once it runs; a voter is removed only from a broker that is
// leaving: it holds no partition replica, since without a node in the
// metadata group it no longer learns where replicas go. The voters are
// recorded in the metadata (meta.SetMetadataVoters) before the Raft
// membership changes, so that a change cut short, or a voter that comes
// back on an empty disk, is completed in the role the record gives.
type Quorum struct {
	// Self is this broker's id.
	Self int32
	// FoundingVoters are --metadata-voters, the voters until the metadata
	// records others.
	FoundingVoters map[int32]string
	Meta           *meta.StateMachine
	Raft           MetadataRaft
	Liveness       *Liveness
	// Propose proposes a metadata command and waits for its outcome.
	Propose func(ctx context.Context, cmd *meta.Command) (meta.Outcome, error)
	// Leader is the metadata group's leader as this broker knows it, or
	// false, and the group's term.
	Leader func() (id int32, known bool, term int32)
	Log    *slog.Logger
}

// MetadataRaft is what the quorum asks of this broker's Raft node host
// (a *dragonboat.NodeHost) about the metadata group.
type MetadataRaft interface {
	SyncGetClusterMembership(ctx context.Context, clusterID uint64) (*dragonboat.Membership, error)
	SyncRequestAddNode(ctx context.Context, clusterID, nodeID uint64, target dragonboat.Target, configChangeIndex uint64) error
	SyncRequestDeleteNode(ctx context.Context, clusterID, nodeID uint64, configChangeIndex uint64) error
}

// Member is one broker's node in the metadata group.
type Member struct {
	Broker      int32
	Incarnation [16]byte
}

// View is the metadata group as this broker sees it.
type View struct {
	Leader  int32 // -1 if unknown
	Term    int32
	Applied uint64
	Voters  []Member
	// Observers are the registered brokers whose current node follows the
	// group without a vote.
	Observers []Member
	Brokers   map[int32]meta.Broker
}

// Describe is the metadata group as this broker sees it (DescribeQuorum).
func (q Quorum) Describe(ctx context.Context) (View, error) {
	mem, err := q.Raft.SyncGetClusterMembership(ctx, meta.MetadataShard)
	if err != nil {
		return View{}, err
	}
	leader, known, term := q.Leader()
	v := View{Leader: -1, Term: term, Applied: q.Meta.Applied(), Brokers: map[int32]meta.Broker{}}
	if known {
		v.Leader = leader
	}
	for _, br := range q.Meta.Brokers() {
		v.Brokers[br.ID] = br
	}
	member := func(n uint64) Member {
		id := meta.BrokerOfNode(n)
		m := Member{Broker: id}
		if br, ok := v.Brokers[id]; ok && br.Node() == n {
			m.Incarnation = IncarnationKey(br.Incarnation)
		}
		return m
	}
	for n := range mem.Nodes {
		v.Voters = append(v.Voters, member(n))
	}
	for n := range mem.Observers {
		if br, ok := v.Brokers[meta.BrokerOfNode(n)]; ok && br.Node() == n {
			v.Observers = append(v.Observers, member(n))
		}
	}
	byBroker := func(a, c Member) int { return int(a.Broker - c.Broker) }
	slices.SortFunc(v.Voters, byBroker)
	slices.SortFunc(v.Observers, byBroker)
	return v, nil
}

// IncarnationKey is an incarnation as Kafka's 16-byte directory id: the
// voter key that tells a broker's incarnations apart.
func IncarnationKey(incarnation string) [16]byte {
	var key [16]byte
	if raw, err := hex.DecodeString(incarnation); err == nil && len(raw) == len(key) {
		copy(key[:], raw)
	}
	return key
}

// VoterChange is one AddRaftVoter or RemoveRaftVoter request.
type VoterChange struct {
	ClusterID *string
	Broker    int32
	Key       [16]byte // zero: any incarnation
}

// target refuses a change addressed to another cluster or to an
// incarnation the broker no longer is, and returns the broker as
// recorded and the group's membership as it stands.
func (q Quorum) target(ctx context.Context, c VoterChange) (meta.Broker, *dragonboat.Membership, *kerr.Error, string) {
	var br meta.Broker
	var known bool
	var cluster string
	q.Meta.Read(func(s *meta.State) {
		br, known = s.Broker(c.Broker)
		cluster = s.ClusterID()
	})
	switch {
	case c.ClusterID != nil && *c.ClusterID != "" && *c.ClusterID != cluster:
		return br, nil, kerr.InconsistentClusterID, fmt.Sprintf("this is cluster %q, not %q", cluster, *c.ClusterID)
	case !known:
		return br, nil, kerr.VoterNotFound, fmt.Sprintf("broker %d is not registered", c.Broker)
	case c.Key != [16]byte{} && c.Key != IncarnationKey(br.Incarnation):
		return br, nil, kerr.InvalidVoterKey, fmt.Sprintf("broker %d runs as incarnation %s now, not the directory id given", c.Broker, br.Incarnation)
	}
	mem, err := q.Raft.SyncGetClusterMembership(ctx, meta.MetadataShard)
	if err != nil {
		return br, nil, kerr.RequestTimedOut, "the metadata group did not answer: " + err.Error()
	}
	return br, mem, nil, ""
}

// AddVoter promotes a running broker's observer to a voter.
func (q Quorum) AddVoter(ctx context.Context, c VoterChange) (*kerr.Error, string) {
	br, mem, code, msg := q.target(ctx, c)
	if code != nil {
		return code, msg
	}
	node := br.Node()
	_, voting := mem.Nodes[node]
	recorded := false
	q.Meta.Read(func(s *meta.State) { recorded = s.VotesInMetadata(c.Broker, q.FoundingVoters) })
	if voting && recorded {
		return kerr.DuplicateVoter, fmt.Sprintf("broker %d already votes in the metadata group", c.Broker)
	}
	if _, following := mem.Observers[node]; !following && !voting {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d has not joined the metadata group yet: start it first", c.Broker)
	}
	if !q.waitLive(ctx, c.Broker) {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d does not answer: a voter that cannot vote would only weaken the quorum", c.Broker)
	}
	if code, msg := q.record(ctx, VotingBrokers(mem.Nodes), c.Broker, true); code != nil {
		return code, msg
	}
	if !voting {
		if err := q.Raft.SyncRequestAddNode(ctx, meta.MetadataShard, node, br.RaftAddr, mem.ConfigChangeID); err != nil {
			return kerr.RequestTimedOut, "the metadata group did not take the new voter: " + err.Error()
		}
	}
	q.Log.Info("metadata voter added", "voter", c.Broker, "generation", br.Generation)
	return nil, ""
}

// waitLive gives the liveness probes a window to see a broker that just
// started.
func (q Quorum) waitLive(ctx context.Context, id int32) bool {
	for deadline := time.Now().Add(LivenessWindow); !q.Liveness.IsLive(id); {
		if time.Now().After(deadline) || !wait.Sleep(ctx, LivenessInterval) {
			return false
		}
	}
	return true
}

// RemoveVoter removes a leaving broker's node from the metadata group.
// Refused while the broker hosts partition replicas, for the last voter,
// and when the voters left would not have a live majority: the group
// could then take no change, the next voter change included.
func (q Quorum) RemoveVoter(ctx context.Context, c VoterChange) (*kerr.Error, string) {
	br, mem, code, msg := q.target(ctx, c)
	if code != nil {
		return code, msg
	}
	node := br.Node()
	if _, voting := mem.Nodes[node]; !voting {
		return kerr.VoterNotFound, fmt.Sprintf("broker %d does not vote in the metadata group", c.Broker)
	}
	hosts := false
	q.Meta.Read(func(s *meta.State) { hosts = s.HostsReplicas(c.Broker) })
	if hosts {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d hosts partition replicas: move them to other brokers first, since a broker outside the metadata group no longer learns where replicas go", c.Broker)
	}
	// Probed now rather than as the periodic probes last saw them: a voter
	// that stopped a moment ago would be counted for a second more.
	left := slices.DeleteFunc(VotingBrokers(mem.Nodes), func(id int32) bool { return id == c.Broker })
	live := 0
	for _, id := range left {
		peer, _ := q.Meta.Broker(id)
		if id == q.Self || (peer.RaftAddr != "" && q.Liveness.Probe(peer)) {
			live++
		}
	}
	if len(left) == 0 {
		return kerr.InvalidRequest, fmt.Sprintf("broker %d is the metadata group's last voter", c.Broker)
	}
	if live <= len(left)/2 {
		return kerr.InvalidRequest, fmt.Sprintf("without broker %d, %d of the %d voters left answer: the metadata group would have no quorum", c.Broker, live, len(left))
	}
	if code, msg := q.record(ctx, left, c.Broker, false); code != nil {
		return code, msg
	}
	if err := q.Raft.SyncRequestDeleteNode(ctx, meta.MetadataShard, node, mem.ConfigChangeID); err != nil {
		return kerr.RequestTimedOut, "the metadata group did not remove the voter: " + err.Error()
	}
	q.Log.Warn("metadata voter removed: the broker no longer follows the metadata", "voter", c.Broker, "generation", br.Generation)
	return nil, ""
}

// VotingBrokers are the brokers whose nodes vote in the group.
func VotingBrokers(nodes map[uint64]string) []int32 {
	out := make([]int32, 0, len(nodes))
	for n := range nodes {
		out = append(out, meta.BrokerOfNode(n))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// record proposes the voters with broker added to or taken from current.
func (q Quorum) record(ctx context.Context, current []int32, broker int32, add bool) (*kerr.Error, string) {
	voters := slices.DeleteFunc(slices.Clone(current), func(id int32) bool { return id == broker })
	if add {
		voters = append(voters, broker)
	}
	out, err := q.Propose(ctx, &meta.Command{SetMetadataVoters: &meta.SetMetadataVoters{Voters: voters}})
	switch {
	case err != nil:
		return kerr.RequestTimedOut, "the metadata group did not record the voters: " + err.Error()
	case out.Err != nil:
		return kafkaerr.Of(out.Err, kerr.UnknownServerError), "the metadata group refused the voters: " + out.Err.Error()
	}
	return nil, ""
}
