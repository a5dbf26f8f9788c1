package replica

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/lni/dragonboat/v3/raftio"
	sm "github.com/lni/dragonboat/v3/statemachine"

	"github.com/raftka/raftka/broker/cluster"
	"github.com/raftka/raftka/broker/frames"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
	"github.com/raftka/raftka/broker/raftlog"
	"github.com/raftka/raftka/broker/security"
)

// Config is what the replica lifecycle needs of the broker's
// configuration; the fields mean what the broker's do.
type Config struct {
	ID                                int32
	DataDir                           string
	RaftAddr                          string
	RTT                               time.Duration
	MetadataVoters                    map[int32]string
	Listeners                         []security.Listener
	InterBrokerUser                   string
	InterBrokerCAFile                 string
	ScramUsersDir                     string
	PartitionFrames                   bool
	SnapshotEntries                   uint64
	RaftLogRetainBytes                int64
	RaftLogMaxBytes                   int64
	RetentionCheckInterval            time.Duration
	ProducerIDExpiration              time.Duration
	ProducerIDExpirationCheckInterval time.Duration
	LogCleanerInterval                time.Duration
	ReplicaLagMax                     time.Duration
	FollowerThrottledRate             int64
	LeaderThrottledRate               int64
}

// Metrics is what the replica lifecycle reports.
type Metrics interface {
	// Applied: a replica's state machine applied entries for d.
	Applied(d time.Duration)
	// BudgetSnapshot: a snapshot taken because the Raft log store went
	// over its bytes.
	BudgetSnapshot()
	// Cleaned: a compaction pass removed so much.
	Cleaned(bytes, records int64)
}

// Deps are the parts of the broker the replica lifecycle works with.
type Deps struct {
	Meta     *meta.StateMachine
	Log      *slog.Logger
	Metrics  Metrics
	Liveness *cluster.Liveness
	PeerHTTP *cluster.PeerHTTP
	// Propose proposes a metadata command and waits for its outcome.
	Propose func(ctx context.Context, cmd *meta.Command) (meta.Outcome, error)
	// Registered is closed once this broker's registration is applied.
	Registered <-chan struct{}
	// MetaNode is this broker's node in the metadata group; MetaLeader
	// the broker leading it, if known.
	MetaNode   func() uint64
	MetaLeader func() (int32, bool)
}

// Manager owns this broker's partition replicas through their lives: it
// starts and stops them as the metadata places them (replicas.go), keeps
// their Raft groups' membership as placed (membership.go), recovers a
// partition from its last intact replica on request (recovery.go),
// catches a replica up from its peers after a snapshot (catchup.go),
// tracks which followers are in sync (insync.go), trims each Raft log by
// bytes (raftlogtrim.go), applies retention and compaction (retention.go,
// logcleaner.go), throttles catching-up replication (throttle.go), follows
// and balances leadership (leaderevents.go, leaders.go), wakes quiet
// groups whose peers changed (quiet.go), and hands leadership off at
// shutdown (shutdown.go). Each concern runs its own loop, started by
// Start.
type Manager struct {
	Deps
	cfg     Config
	nh      *dragonboat.NodeHost
	raftLog *raftlog.Store
	// listening is when the node host began to listen on the Raft address.
	listening time.Time

	replicas   *replicaSet
	members    *memberships
	recoveries *recoveries
	throttle   *replicationThrottle
	leaders    *leaderEvents
	progress   followerProgress
	quiet      *quietGroups
	peers      peerClients

	ctx context.Context
	bg  sync.WaitGroup
}

// New builds the replica lifecycle; nothing runs until Start.
func New(cfg Config, deps Deps) *Manager {
	m := &Manager{Deps: deps, cfg: cfg, leaders: newLeaderEvents()}
	m.replicas = newReplicaSet(m)
	m.members = newMemberships(m)
	m.recoveries = newRecoveries(m)
	m.throttle = newReplicationThrottle(m)
	m.quiet = newQuietGroups(m)
	m.peers.b = m
	return m
}

// CheckPeerTLS reads the inter-broker CA once, so that a broker whose
// SASL_SSL inter-broker listener cannot be dialled does not start.
func (b *Manager) CheckPeerTLS() error {
	if !b.cfg.Listeners[0].Protocol.TLS() {
		return nil
	}
	_, err := b.peers.dialTLS()
	return err
}

// UseRaftLog is the Raft log store the node host opened, when it runs on
// ours (--raft-log-store wal); before Start.
func (b *Manager) UseRaftLog(s *raftlog.Store) { b.raftLog = s }

// Start runs the lifecycle's loops, on the node host AttachNodeHost gave,
// until ctx ends; Wait waits for them.
func (b *Manager) Start(ctx context.Context) {
	b.ctx = ctx
	b.goBackground(b.replicas.run)
	b.goBackground(leadership{b}.reportLeaders)
	b.goBackground(retention{b}.enforceRetention)
	if b.cfg.ProducerIDExpiration > 0 {
		b.goBackground(retention{b}.expireProducers)
	}
	b.goBackground(b.cleanLogs)
	b.goBackground(b.trackFollowers)
	b.goBackground(raftLogTrimmer{b}.run)
	b.goBackground(leadership{b}.balanceLeaders)
	b.goBackground(b.members.run)
	b.goBackground(b.recoveries.run)
	b.goBackground(b.quiet.run)
}

// AttachNodeHost gives the lifecycle the node host before Start, for the
// broker's start-up steps that already ask it (SnapshotListsVoter).
func (b *Manager) AttachNodeHost(nh *dragonboat.NodeHost) { b.nh, b.listening = nh, time.Now() }

func (b *Manager) goBackground(fn func(ctx context.Context)) {
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		fn(b.ctx)
	}()
}

// Wait waits for the loops Start started, once their context ended.
func (b *Manager) Wait() { b.bg.Wait() }

// Close forgets the replicas and closes the clients to the peers, once
// the node host stopped.
func (b *Manager) Close() {
	b.replicas.closeAll()
	b.peers.closeAll()
}

// LeaderUpdated is told of each leader change Dragonboat reports, on its
// goroutines, so it only records and queues.
func (b *Manager) LeaderUpdated(info raftio.LeaderInfo) {
	b.leaders.observe(info)
	if info.LeaderID != 0 {
		b.members.sawLeader(info.ClusterID)
	}
}

// nodeIn is this broker's Raft node in a group, or 0 if it has none.
func (b *Manager) nodeIn(shard uint64) uint64 {
	if shard == meta.MetadataShard {
		return b.MetaNode()
	}
	if rep := b.replicas.get(shard); rep != nil {
		return rep.node
	}
	return 0
}

// liveReplicas are the replicas on brokers that answer.
func (b *Manager) liveReplicas(replicas []int32) []int32 {
	var out []int32
	for _, id := range replicas {
		if b.Liveness.IsLive(id) {
			out = append(out, id)
		}
	}
	return out
}

// Writer implements frames.Logs for the Raft log store.
func (b *Manager) Writer(shard uint64) frames.Writer { return b.replicas.Writer(shard) }

// Dir implements frames.Logs.
func (b *Manager) Dir(shard, node uint64) string { return b.replicas.Dir(shard, node) }

// timedUpdates is a partition replica's state machine whose Updates are
// timed, at the edge, so that the state machine itself reads no clock.
type timedUpdates struct {
	*partition.StateMachine
	m Metrics
}

// Update implements sm.IOnDiskStateMachine.
func (t timedUpdates) Update(entries []sm.Entry) ([]sm.Entry, error) {
	began := time.Now()
	out, err := t.StateMachine.Update(entries)
	t.m.Applied(time.Since(began))
	return out, err
}
