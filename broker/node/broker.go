package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v3"
	dbconfig "github.com/lni/dragonboat/v3/config"
	dblogger "github.com/lni/dragonboat/v3/logger"
	"github.com/lni/dragonboat/v3/raftio"
	sm "github.com/lni/dragonboat/v3/statemachine"

	"github.com/raftka/raftka/broker/cluster"
	"github.com/raftka/raftka/broker/groups"
	"github.com/raftka/raftka/broker/hold"
	"github.com/raftka/raftka/broker/identity"
	"github.com/raftka/raftka/broker/internal/openfiles"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/offsetstopic"
	"github.com/raftka/raftka/broker/raftlog"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/broker/security"
	"github.com/raftka/raftka/broker/server"
	"github.com/raftka/raftka/broker/txn"
)

// Broker is one running Raftka broker: the composition root that builds
// the broker's parts, starts them in order and stops them.
type Broker struct {
	cfg  Config
	log  *slog.Logger
	nh   *dragonboat.NodeHost
	meta *meta.StateMachine
	// incarnation is this broker's identity in the cluster, settled in
	// Start before any Raft group starts and then fixed.
	incarnation *cluster.Incarnation
	// started is closed once the NodeHost runs; the HTTP endpoints that
	// need it answer 503 before.
	started chan struct{}

	// replicas is the partition replicas' lifecycle (package replica).
	replicas *replica.Manager
	liveness *cluster.Liveness
	groups   *groups.Coordinator
	// front is the Kafka front door (package server), once its
	// listeners are bound.
	front   *server.Server
	metrics *metrics
	// raftLog is the Raft log store with --raft-log-store wal, for
	// metrics.
	raftLog atomic.Pointer[raftlog.Store]
	// peerHTTP: brokers' calls to each other's HTTP endpoint.
	peerHTTP *cluster.PeerHTTP

	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup
}

func init() {
	// Dragonboat logs every election and snapshot at INFO; a broker with a
	// thousand partitions would drown its own logs.
	for _, pkg := range []string{"dragonboat", "rsm", "transport", "logdb", "raftpb", "settings", "gossip", "grpc"} {
		dblogger.GetLogger(pkg).SetLevel(dblogger.WARNING)
	}
	// raft warns of every dropped proposal and vote: routine during failover.
	dblogger.GetLogger("raft").SetLevel(dblogger.ERROR)
	// config warns, for every group started, that the election timeout is
	// less than ten heartbeats: chosen on purpose (see replica.ElectionTimeout).
	dblogger.GetLogger("config").SetLevel(dblogger.ERROR)
}

// metaNode is this broker's Raft node in the metadata group: its broker
// id at its generation (meta.RaftNodeID).
func (b *Broker) metaNode() uint64 { return meta.RaftNodeID(b.cfg.ID, b.incarnation.Generation()) }

// Start opens the broker's storage, joins Raft and starts serving Kafka,
// one named step after another; a step that fails undoes what the ones
// before it started.
func Start(cfg Config) (*Broker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	b, err := newBroker(cfg)
	if err != nil {
		return nil, err
	}
	for _, step := range []struct {
		name string
		run  func() error
	}{
		// The HTTP endpoints start first: voters starting on empty disks
		// ask each other whether the cluster exists before any of them
		// starts Raft.
		{"http listener", b.serveHTTPEndpoint},
		{"start raft", b.startNodeHost},
		{"settle this broker's incarnation", func() error { return b.incarnation.Settle(b.ctx, b.nh) }},
		{"start metadata group", b.startMetadata},
		{"bind kafka listeners", b.openFrontDoor},
	} {
		if err := step.run(); err != nil {
			b.abortStart()
			return nil, fmt.Errorf("%s: %w", step.name, err)
		}
	}
	close(b.started)
	b.startLoops()
	b.log.Info("broker started", "kafka", b.Addr().String(), "listeners", b.front.Listeners(), "raft", cfg.RaftAddr, "generation", b.incarnation.Generation())
	return b, nil
}

// newBroker builds the broker's parts and reads its identity from the data
// directory; nothing runs yet.
func newBroker(cfg Config) (*Broker, error) {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Broker{cfg: cfg, log: cfg.Logger.With("broker", cfg.ID), meta: meta.NewStateMachine(),
		ctx: ctx, cancel: cancel, started: make(chan struct{})}
	b.groups = groups.NewCoordinator(groups.Config{InitialRebalanceDelay: cfg.GroupInitialRebalanceDelay, Logger: b.log,
		Recorded: func(group string) (rec meta.GroupMetadata, ok bool) {
			b.meta.Read(func(s *meta.State) { rec, ok = s.RecordedGroupMetadata(group) })
			return rec, ok
		}})
	b.metrics = newMetrics()
	var err error
	if b.peerHTTP, err = cluster.NewPeerHTTP(cfg.RaftTLS, b.log); err != nil {
		cancel()
		return nil, fmt.Errorf("raft TLS files: %w", err)
	}
	b.liveness = cluster.NewLiveness(cfg.ID, b.meta, b.peerHTTP.RaftClientTLS)
	b.incarnation, err = cluster.LoadIncarnation(cluster.IncarnationConfig{ID: cfg.ID, DataDir: cfg.DataDir, RaftDir: b.raftDir(),
		FoundingVoters: cfg.MetadataVoters, JoinAddresses: cfg.JoinAddresses}, b.log, b.meta, b.peerHTTP, b.proposeMeta, b.selfRecord)
	if err != nil {
		cancel()
		return nil, err
	}
	b.replicas = replica.New(b.replicaConfig(), replica.Deps{Meta: b.meta, Log: b.log, Metrics: b.metrics, Liveness: b.liveness,
		PeerHTTP: b.peerHTTP, Propose: b.proposeMeta, Registered: b.incarnation.Registered(), MetaNode: b.metaNode, MetaLeader: b.metaLeader})
	if err := b.replicas.CheckPeerTLS(); err != nil {
		cancel()
		return nil, err
	}
	b.metrics.registry.MustRegister(partitionCollector{id: cfg.ID, meta: b.meta, replicas: b.replicas,
		generation: b.incarnation.Generation, raftLog: &b.raftLog}, diskCollector{dir: cfg.DataDir, minFree: cfg.MinFreeBytes})
	return b, nil
}

// replicaConfig is what the replica lifecycle needs of the configuration.
func (b *Broker) replicaConfig() replica.Config {
	c := b.cfg
	return replica.Config{ID: c.ID, DataDir: c.DataDir, RaftAddr: c.RaftAddr, RTT: c.RTT, MetadataVoters: c.MetadataVoters, Listeners: c.Listeners,
		InterBrokerUser: c.InterBrokerUser, InterBrokerCAFile: c.InterBrokerCAFile, ScramUsersDir: c.ScramUsersDir, PartitionFrames: c.PartitionFrames,
		SnapshotEntries: c.SnapshotEntries, RaftLogRetainBytes: c.RaftLogRetainBytes, RaftLogMaxBytes: c.RaftLogMaxBytes,
		RetentionCheckInterval: c.RetentionCheckInterval, ProducerIDExpiration: c.ProducerIDExpiration,
		ProducerIDExpirationCheckInterval: c.ProducerIDExpirationCheckInterval, LogCleanerInterval: c.LogCleanerInterval,
		ReplicaLagMax: c.ReplicaLagMax, FollowerThrottledRate: c.FollowerThrottledRate, LeaderThrottledRate: c.LeaderThrottledRate}
}

// abortStart undoes a start that failed: it closes the listeners bound,
// stops Raft if it runs, and ends the loops started.
func (b *Broker) abortStart() {
	if b.front != nil {
		b.front.Close()
	}
	if b.nh != nil {
		b.nh.Stop()
	}
	b.cancel()
	b.bg.Wait()
}

// serveHTTPEndpoint binds the HTTP endpoint, if the broker has one, and
// serves it.
func (b *Broker) serveHTTPEndpoint() error {
	if b.cfg.HTTPListen == "" {
		return nil
	}
	hl, err := net.Listen("tcp", b.cfg.HTTPListen)
	if err != nil {
		return err
	}
	b.goBackground(func(ctx context.Context) { b.serveHTTP(ctx, hl) })
	return nil
}

// startNodeHost starts Dragonboat's NodeHost over the Raft log store
// --raft-log-store chose.
func (b *Broker) startNodeHost() error {
	nhConfig := dbconfig.NodeHostConfig{
		NodeHostDir:       b.raftDir(),
		RTTMillisecond:    uint64(b.cfg.RTT / time.Millisecond),
		RaftAddress:       b.cfg.RaftAddr,
		ListenAddress:     b.cfg.RaftListen,
		RaftEventListener: b,
		Expert:            b.expertConfig(),
	}
	if t := b.cfg.RaftTLS; t != nil {
		nhConfig.MutualTLS, nhConfig.CAFile, nhConfig.CertFile, nhConfig.KeyFile = true, t.CAFile, t.CertFile, t.KeyFile
	}
	nh, err := dragonboat.NewNodeHost(nhConfig)
	if err != nil {
		if strings.Contains(err.Error(), "logdb type changed") { // Dragonboat's error is in an internal package
			return fmt.Errorf("%w: %s was written with a Raft log store other than --raft-log-store %s", err, b.cfg.DataDir, b.cfg.RaftLogStore)
		}
		return err
	}
	b.nh = nh
	b.replicas.AttachNodeHost(nh)
	return nil
}

// expertConfig is Dragonboat's engine and log store as the broker runs
// them.
func (b *Broker) expertConfig() dbconfig.ExpertConfig {
	logdb := dbconfig.GetTinyMemLogDBConfig()
	logdb.Shards = 1
	logdb.KVWriteBufferSize = uint64(b.cfg.RaftLogWriteBuffer)
	logdb.KVMaxWriteBufferNumber = 4
	expert := dbconfig.GetDefaultExpertConfig()
	expert.LogDB = logdb
	if b.cfg.RaftLogStore == RaftLogWAL {
		opened := func(s *raftlog.Store) {
			b.raftLog.Store(s)
			b.replicas.UseRaftLog(s)
			if n := s.Dropped(); n > 0 {
				b.log.Warn("raft log replay dropped records whose partition frames a crash tore: their saves never returned, so nothing was acknowledged from them", "records", n)
			}
			if n := s.Repaired(); n > 0 {
				b.log.Warn("raft log replay wrote partition frames a crash tore again from the copies in its records", "frames", n)
			}
		}
		expert.LogDBFactory = raftlog.Factory{FileBytes: b.cfg.RaftLogFileBytes, CopyBytes: b.cfg.RaftLogCopyBytes, Opened: opened,
			Frames: b.replicas, Timed: b.metrics.timedSave}
	}
	// A step worker saves the Raft state of all its groups in one call, so
	// a group's proposals and its followers' answers wait behind the saves
	// of the groups it shares a worker with; 16 (Dragonboat's default)
	// mostly gives a busy group a worker of its own (docs/design/latency.md).
	expert.Engine.ExecShards = 16
	expert.Engine.CommitShards = 4
	expert.Engine.ApplyShards = 4
	expert.Engine.SnapshotShards = 4
	expert.Engine.CloseShards = 4
	return expert
}

// openFrontDoor binds the Kafka listeners of the front door (package
// server), with what its handlers answer from.
func (b *Broker) openFrontDoor() error {
	c := b.cfg
	throttled := func(key string) { b.metrics.throttled.WithLabelValues(key).Inc() }
	catchUp := func(ctx context.Context) error {
		_, err := b.nh.SyncRead(ctx, meta.MetadataShard, nil)
		return err
	}
	deps := server.Deps{Meta: b.meta, Replicas: b.replicas, Groups: b.groups, Liveness: b.liveness,
		Auth: security.NewAuthenticator(c.SASL, b.meta, catchUp), Authz: security.NewAuthorizer(c.Authorizer, b.meta),
		Quotas: security.NewQuotas(b.meta, c.QuotaWindowing, throttled), Raft: b.nh, Quorum: b.quorum(),
		Propose: b.proposeMeta, MetaLeader: b.metaLeader, Metrics: b.metrics, Log: b.log}
	front, err := server.Listen(b.ctx, b.frontDoorConfig(), deps)
	if err != nil {
		return err
	}
	b.front = front
	return nil
}

// frontDoorConfig is what the Kafka front door needs of the
// configuration.
func (b *Broker) frontDoorConfig() server.Config {
	c := b.cfg
	return server.Config{ID: c.ID, DataDir: c.DataDir, Listeners: c.Listeners, TLS: c.TLS, ListenerTLS: c.ListenerTLS,
		MaxRequestBytes: c.MaxRequestBytes, MaxConnections: c.MaxConnections, ConnectionsMaxIdle: c.ConnectionsMaxIdle, AuthenticationTimeout: c.SASL.AuthenticationTimeout, AuthorizerEnabled: c.Authorizer.Enabled,
		AutoCreateTopics: c.AutoCreateTopics, DefaultPartitions: c.DefaultPartitions, DefaultReplicationFactor: c.DefaultReplicationFactor,
		MinFreeBytes: c.MinFreeBytes, FollowerThrottledRate: c.FollowerThrottledRate, LeaderThrottledRate: c.LeaderThrottledRate,
		HTTPEndpoint: b.httpEndpoint(), StepDownGrace: b.stepDownGrace(), TransactionMaxTimeout: c.TransactionMaxTimeout}
}

// startLoops starts the broker's background loops, each owning one
// concern, and the Kafka listeners' accept loops last.
func (b *Broker) startLoops() {
	b.goBackground(b.incarnation.Register)
	b.replicas.Start(b.ctx)
	b.goBackground(b.liveness.Run)
	b.goBackground(b.groups.Run)
	b.goBackground(func(ctx context.Context) {
		hold.Run(ctx, hold.Deps{ID: b.cfg.ID, Meta: b.meta, Replicas: b.replicas, Groups: b.groups, Propose: b.proposeMeta,
			MetaLeader: b.metaLeader, Metrics: b.metrics, Log: b.log})
	})
	b.goBackground(func(ctx context.Context) {
		offsetstopic.Run(ctx, offsetstopic.Deps{Groups: b.groups, Meta: b.meta, Propose: b.proposeMeta, Log: b.log,
			Coordinating: func() bool { id, ok := b.metaLeader(); return ok && id == b.cfg.ID }})
	})
	b.goBackground(func(ctx context.Context) {
		txn.Run(ctx, txn.Deps{ID: b.cfg.ID, Meta: b.meta, Partitions: partitionProposer{b}, Propose: b.proposeMeta, MetaLeader: b.metaLeader, Log: b.log})
	})
	if b.cfg.ScramUsersDir != "" {
		b.goBackground(security.ScramUsers{Dir: b.cfg.ScramUsersDir, Credentials: b.meta, Propose: b.proposeMeta, Log: b.log}.Run)
	}
	b.goBackground(b.front.Serve)
}

// startMetadata starts this broker's member of the metadata group in the
// role it joined in: a voter, or an observer (startsAsObserver).
// A founder starts the group with the other voters (generation 0); every
// other incarnation was added by a member when it joined (cluster.Incarnation).
func (b *Broker) startMetadata() error {
	create := func(uint64, uint64) sm.IConcurrentStateMachine { return b.meta }
	cfg := replica.ShardConfig(meta.MetadataShard, b.metaNode(), 1000, b.cfg.RTT)
	cfg.IsObserver = b.startsAsObserver()
	switch {
	case b.nh.HasNodeInfo(meta.MetadataShard, b.metaNode()):
		return b.nh.StartConcurrentCluster(nil, false, create, cfg)
	case b.incarnation.Identity().Original && b.cfg.isVoter():
		voters := map[uint64]dragonboat.Target{}
		for id, addr := range b.cfg.MetadataVoters {
			voters[meta.RaftNodeID(id, 0)] = addr
		}
		return b.nh.StartConcurrentCluster(voters, false, create, cfg)
	default:
		return b.nh.StartConcurrentCluster(nil, true, create, cfg)
	}
}

// startsAsObserver: a node that joined the metadata group as an observer
// (as its identity records, or, in a directory from before roles were
// recorded, as a broker not among --metadata-voters) starts as one until
// its own latest snapshot lists it as a voter (snapshotListsVoter):
// AddRaftVoter may have promoted it since. A founder, or a node that
// joined as a voter, starts as a voter.
func (b *Broker) startsAsObserver() bool {
	switch role := b.incarnation.Identity().MetadataRole; {
	case role == identity.RoleVoter, role == "" && b.cfg.isVoter():
		return false
	}
	return !b.replicas.SnapshotListsVoter(meta.MetadataShard, b.metaNode())
}

// Failed delivers the error that stopped this broker while it ran: its
// data directory belongs to an incarnation that a newer one replaced.
func (b *Broker) Failed() <-chan error { return b.incarnation.Failed() }

// raftDir is the NodeHost's directory.
func (b *Broker) raftDir() string { return filepath.Join(b.cfg.DataDir, "raft") }

func (b *Broker) goBackground(fn func(ctx context.Context)) {
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		fn(b.ctx)
	}()
}

// Addr is the address the inter-broker Kafka listener is bound to.
func (b *Broker) Addr() net.Addr { return b.front.Addr() }

// Close hands off the leadership of the groups it leads (replica.Manager),
// stops serving and closes Raft; data stays on disk.
func (b *Broker) Close() {
	b.replicas.HandOffLeadership(b.cfg.ControlledShutdownTimeout)
	b.cancel()
	b.front.Close()
	b.bg.Wait()
	b.replicas.Wait()
	b.front.Wait()
	b.nh.Stop()
	b.replicas.Close()
}

// selfRecord is this broker's addresses as the metadata records them.
func (b *Broker) selfRecord() (meta.Broker, error) {
	var endpoints []meta.Endpoint
	for _, l := range b.cfg.Listeners {
		host, port, err := splitHostPort(l.Advertised)
		if err != nil {
			return meta.Broker{}, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		endpoints = append(endpoints, meta.Endpoint{Name: l.Name, Host: host, Port: port})
	}
	return meta.Broker{ID: b.cfg.ID, Host: endpoints[0].Host, Port: endpoints[0].Port, Listeners: endpoints, RaftAddr: b.cfg.RaftAddr,
		HTTPAddr: b.httpEndpoint(), Rack: b.cfg.Rack, Features: meta.Features, MaxReplicas: openfiles.Current().MaxReplicas()}, nil
}

func splitHostPort(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseInt(port, 10, 32)
	return host, int32(n), err
}

// httpEndpoint is where this broker's HTTP endpoint is reached, as the
// metadata records it and the broker config raftka.http.endpoint says.
func (b *Broker) httpEndpoint() string {
	host, _, _ := splitHostPort(b.cfg.Listeners[0].Advertised)
	return advertisedHTTP(host, b.cfg.HTTPListen)
}

// advertisedHTTP is where peers reach this broker's HTTP endpoint: the
// listen address, or the advertised Kafka host at its port when it
// listens on every interface.
func advertisedHTTP(kafkaHost, listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = kafkaHost
	}
	return net.JoinHostPort(host, port)
}

// LeaderUpdated implements raftio.IRaftEventListener. It runs on Dragonboat's
// goroutines, so it only records and queues.
func (b *Broker) LeaderUpdated(info raftio.LeaderInfo) {
	b.replicas.LeaderUpdated(info)
	if info.ClusterID == meta.MetadataShard && info.LeaderID != info.NodeID {
		// Group membership lives on the metadata leader only; a broker
		// that lost that role must not answer for stale groups later.
		b.groups.Reset()
	}
}

// stepDownGrace is how long a leader that stepped down still waits for
// what it proposed: an election timeout, time for a new leader to commit
// what it got, as after a leadership transfer.
func (b *Broker) stepDownGrace() time.Duration { return replica.ElectionWait(b.cfg.RTT) }

// metaLeader returns the broker leading the metadata group, which is also
// the group coordinator.
func (b *Broker) metaLeader() (int32, bool) {
	id, ok, err := b.nh.GetLeaderID(meta.MetadataShard)
	if err != nil || !ok || id == 0 {
		return -1, false
	}
	return meta.BrokerOfNode(id), true
}

// quorum is the metadata group's voters as package cluster changes them,
// over this broker's parts.
func (b *Broker) quorum() cluster.Quorum {
	return cluster.Quorum{Self: b.cfg.ID, FoundingVoters: b.cfg.MetadataVoters, Meta: b.meta, Raft: b.nh, Liveness: b.liveness,
		Propose: b.proposeMeta, Log: b.log,
		Leader: func() (int32, bool, int32) {
			id, ok := b.metaLeader()
			return id, ok, b.replicas.Term(meta.MetadataShard)
		}}
}
