package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/lni/dragonboat/v3/client"
	sm "github.com/lni/dragonboat/v3/statemachine"

	"github.com/raftka/raftka/broker/cluster"
	"github.com/raftka/raftka/broker/groups"
	"github.com/raftka/raftka/broker/internal/openfiles"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/broker/security"
)

// Config is what the Kafka front door reads of the broker's
// configuration.
type Config struct {
	ID      int32
	DataDir string
	// Listeners are the Kafka listeners to bind; the first is the
	// inter-broker one, which a PLAINTEXT listener makes trusted.
	Listeners []security.Listener
	// TLS is the files of SSL and SASL_SSL listeners; ListenerTLS
	// replaces them for the listeners it names.
	TLS         security.TLSConfig
	ListenerTLS map[string]security.TLSConfig
	// MaxRequestBytes bounds a request's size; a larger one closes the
	// connection, as Kafka's socket.request.max.bytes does.
	MaxRequestBytes int32
	// MaxConnections bounds the connections held at once: past it no
	// connection is accepted until one closes, as with Kafka's
	// max.connections, so that clients cannot take the open files the
	// partitions' logs need. 0 takes half the open files the replicas
	// leave (openfiles.Budget.Reserve).
	MaxConnections int
	// ConnectionsMaxIdle closes a connection that has neither sent a
	// request nor been answered for this long (Kafka's
	// connections.max.idle.ms), so that clients that vanished without a
	// FIN give back their slot; 0 never does.
	ConnectionsMaxIdle time.Duration
	// AuthenticationTimeout bounds a SASL or TLS handshake.
	AuthenticationTimeout time.Duration
	// AuthorizerEnabled: ACLs are enforced (security.Authorizer).
	AuthorizerEnabled        bool
	AutoCreateTopics         bool
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// MinFreeBytes is the free space under which produce is refused with
	// KAFKA_STORAGE_ERROR; 0 never refuses.
	MinFreeBytes int64
	// FollowerThrottledRate and LeaderThrottledRate are the flags'
	// replication throttles, which DescribeConfigs reports as static.
	FollowerThrottledRate, LeaderThrottledRate int64
	// HTTPEndpoint is where peers reach this broker's HTTP endpoint
	// (DescribeConfigs' raftka.http.endpoint).
	HTTPEndpoint string
	// StepDownGrace is how long a leader that stepped down still waits
	// for what it proposed before it answers NOT_LEADER_OR_FOLLOWER.
	StepDownGrace time.Duration
	// TransactionMaxTimeout is the longest transaction timeout a producer
	// may ask for (Kafka's transaction.max.timeout.ms); 0 takes
	// DefaultTransactionMaxTimeout.
	TransactionMaxTimeout time.Duration
}

// Deps are the broker's parts the handlers answer from; the composition
// root (package node) builds them.
type Deps struct {
	Meta     *meta.StateMachine
	Replicas *replica.Manager
	Groups   *groups.Coordinator
	Liveness *cluster.Liveness
	Auth     *security.Authenticator
	Authz    *security.Authorizer
	Quotas   *security.Quotas
	Raft     Raft
	// Quorum changes and describes the metadata group's voters.
	Quorum cluster.Quorum
	// Propose proposes a metadata command and waits for its outcome; it
	// fails with replica.ErrDeposed when this broker stopped leading the
	// metadata group meanwhile.
	Propose func(ctx context.Context, cmd *meta.Command) (meta.Outcome, error)
	// MetaLeader is the broker leading the metadata group, which is also
	// the group coordinator.
	MetaLeader func() (int32, bool)
	Metrics    Metrics
	Log        *slog.Logger
}

// Raft is what the handlers ask of Dragonboat's NodeHost: proposals to a
// partition's group, its leader, and the metadata group's membership.
type Raft interface {
	cluster.MetadataRaft
	GetNoOPSession(clusterID uint64) *client.Session
	Propose(session *client.Session, cmd []byte, timeout time.Duration) (*dragonboat.RequestState, error)
	SyncPropose(ctx context.Context, session *client.Session, cmd []byte) (sm.Result, error)
	// SyncRead waits until this broker's replica of a group has applied
	// what its leader had committed when asked (a read barrier).
	SyncRead(ctx context.Context, clusterID uint64, query interface{}) (interface{}, error)
	GetLeaderID(clusterID uint64) (uint64, bool, error)
	RequestLeaderTransfer(clusterID uint64, targetNodeID uint64) error
}

// Metrics is what the front door counts and times; the composition root
// keeps them in its Prometheus registry.
type Metrics interface {
	// Request: a request of API key was answered, received at start.
	Request(key int16, start time.Time)
	// Stage: a produce spent d in the named stage (stages.go).
	Stage(name string, d time.Duration)
	// Produced: a produce request answered as leader.
	Produced()
	// ProducedTo: a partition of topic took records, bytes as sent; a
	// retried batch recognised as a duplicate is not counted again.
	ProducedTo(topic string, bytes, records int)
	// Fetched: a fetch answer carried bytes of topic's records.
	Fetched(topic string, bytes int)
	// Busy: a proposal a partition's group pushed back, and retried.
	Busy()
	// OutOfOrder and Duplicate: an idempotent producer's batch refused
	// as out of sequence, or recognised as a retry.
	OutOfOrder(topic string)
	Duplicate(topic string)
	// Authentication: a SASL exchange's mechanism and result.
	Authentication(mechanism, result string)
}

// Server is the Kafka front door: the bound listeners, their connections,
// and the handlers that answer them.
type Server struct {
	Deps
	cfg Config
	// ctx ends when the broker stops; proposals and long polls end with it.
	ctx       context.Context
	listeners []*kafkaListener
	conns     sync.WaitGroup
	// connSlots holds a token per open connection (Config.MaxConnections).
	connSlots chan struct{}
	// connsFullLogged is when the limit was last logged, Unix ns.
	connsFullLogged atomic.Int64
	pids            producerIDs
	free            freeSpace
	// metaBarriers coalesces the read barriers of transactional checks.
	metaBarriers barriers
	// caughtUpTerm is the metadata term in which this broker, leading
	// it, last passed a read barrier: from then on its replica holds
	// every commit a coordinator acknowledged (coordinatorRefusal).
	caughtUpTerm atomic.Int32
}

// Listen binds the Kafka listeners, each SSL or SASL_SSL one with its TLS
// files (a listener's own, or the broker's); Serve then accepts on them
// until ctx ends.
func Listen(ctx context.Context, cfg Config, deps Deps) (*Server, error) {
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = openfiles.Current().Reserve() / 2
	}
	srv := &Server{Deps: deps, cfg: cfg, ctx: ctx, connSlots: make(chan struct{}, cfg.MaxConnections)}
	certs := map[security.TLSConfig]*security.Files{}
	for _, l := range cfg.Listeners {
		var served *security.Files
		if l.Protocol.TLS() {
			files, own := cfg.ListenerTLS[l.Name]
			if !own {
				files = cfg.TLS
			}
			if served = certs[files]; served == nil {
				var err error
				if served, err = security.NewFiles(files, srv.Log); err != nil {
					srv.Close()
					return nil, fmt.Errorf("listener %s: %w", l.Name, err)
				}
				certs[files] = served
			}
		}
		ln, err := net.Listen("tcp", l.Listen)
		if err != nil {
			srv.Close()
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		kl := &kafkaListener{Listener: l, ln: ln}
		if served != nil {
			kl.tls = served.ServerConfig(l)
		}
		srv.listeners = append(srv.listeners, kl)
	}
	// Kafka's rule: beside client listeners, the inter-broker one stays
	// open to the brokers and the operator whatever clients hold.
	srv.listeners[0].protected = len(srv.listeners) > 1
	return srv, nil
}

// Addr is the address the inter-broker listener is bound to.
func (srv *Server) Addr() net.Addr { return srv.listeners[0].ln.Addr() }

// Listeners is how many Kafka listeners are bound.
func (srv *Server) Listeners() int { return len(srv.listeners) }

// Close stops accepting connections; those open end with the context.
func (srv *Server) Close() {
	for _, l := range srv.listeners {
		l.ln.Close()
	}
}

// Wait returns once every connection has ended.
func (srv *Server) Wait() { srv.conns.Wait() }
