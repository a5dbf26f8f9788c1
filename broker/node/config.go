package node

import (
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/raftka/raftka/broker/quota"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/broker/security"
)

// The Raft log stores a broker can run on. A NodeHost directory records
// which one wrote it, and Dragonboat refuses to open it with another.
const (
	RaftLogWAL    = "wal"
	RaftLogPebble = "pebble"
)

// Config is a broker's configuration, from flags or a file.
type Config struct {
	ID      int32
	DataDir string
	// Listeners are the Kafka listeners (security.ParseListeners); the
	// first is the inter-broker one, whose advertised address peers and
	// the operator use.
	Listeners []security.Listener
	// SASL configures authentication on SASL_* listeners
	// (security.Authenticator).
	SASL security.SASLConfig
	// TLS configures SSL and SASL_SSL listeners (security.Files).
	TLS security.TLSConfig
	// ListenerTLS replaces TLS for the listeners it names.
	ListenerTLS map[string]security.TLSConfig
	// QuotaWindowing is how client quotas measure rates; Kafka's when
	// zero.
	QuotaWindowing quota.Windowing
	// Authorizer turns ACLs on (security.Authorizer).
	Authorizer security.AuthorizerConfig
	// ScramUsersDir names users and holds their passwords, one file each
	// (security.ScramUsers); empty: none.
	ScramUsersDir string
	// InterBrokerUser is who the brokers authenticate as on a
	// SASL_PLAINTEXT or SASL_SSL inter-broker listener (SCRAM-SHA-512,
	// its password from ScramUsersDir); empty with a PLAINTEXT one.
	InterBrokerUser string
	// InterBrokerCAFile holds the certificates the brokers trust for a
	// SASL_SSL inter-broker listener's certificate, which must name the
	// host each broker advertises on it (Kafka's ssl.truststore for the
	// brokers' own connections).
	InterBrokerCAFile string
	RaftAddr          string // host:port of this broker's Raft transport, stable across restarts
	RaftListen        string // host:port the Raft transport binds; RaftAddr when empty
	// RaftTLS, when set, makes the Raft transport mutual TLS: each broker
	// presents its certificate and accepts only peers whose certificate
	// the CA signed, so that nothing but a broker can speak Raft to it.
	RaftTLS        *security.RaftTLS
	HTTPListen     string // metrics, readiness and safe-restart endpoints; empty disables
	MetadataVoters map[int32]string
	// JoinAddresses are HTTP host:port of brokers to ask for a place in the
	// metadata group, for a broker that is not one of its voters.
	JoinAddresses            []string
	RTT                      time.Duration
	Rack                     string
	AutoCreateTopics         bool
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// MinFreeBytes is the free space under which produce is refused with
	// KAFKA_STORAGE_ERROR, so the disk never fills under a write.
	MinFreeBytes               int64
	GroupInitialRebalanceDelay time.Duration
	MaxRequestBytes            int32
	// MaxConnections bounds the Kafka connections held at once
	// (server.Config).
	MaxConnections int
	// ConnectionsMaxIdle closes connections idle this long (Kafka's
	// connections.max.idle.ms); 0 never.
	ConnectionsMaxIdle time.Duration
	// TransactionMaxTimeout bounds a producer's transaction timeout
	// (server.Config).
	TransactionMaxTimeout time.Duration
	EnablePprof           bool
	// RaftLogStore is the Raft log store: "wal" (package raftlog, one
	// write-ahead log for all groups) or "pebble" (Dragonboat's default).
	RaftLogStore string
	// RaftLogFileBytes is the size at which the wal store starts a new
	// file; files go once no live entry is in them.
	RaftLogFileBytes int64
	// RaftLogCopyBytes: with partition frames, a Raft log save whose
	// entries come to at most this many bytes copies them into its record
	// and leaves their frames to a later fsync (raftlog.SetCopyBytes); 0
	// is raftlog.DefaultCopyBytes, a negative value never copies.
	RaftLogCopyBytes int
	// PartitionFrames keeps each partition's Raft entries in files of the
	// partition's own, where its state machine serves the batches from, so
	// each produced byte is written once per replica (with the wal store;
	// docs/design/write-once-storage.md).
	PartitionFrames bool
	// RaftLogMaxBytes bounds the wal store's files: above it, every
	// partition replica that applied entries since its last snapshot takes
	// one and compacts its whole Raft log (see raftLogTrimmer). 0 is no
	// bound.
	RaftLogMaxBytes int64
	// RaftLogWriteBuffer is the memtable size of the pebble Raft log
	// store. Small memtables flush entries to disk tables before their
	// partitions applied them, which then costs compactions.
	RaftLogWriteBuffer int64
	// SnapshotEntries is how many Raft entries a partition group applies
	// between snapshots; older entries are then compacted away, and a
	// replica that falls further behind catches up from a snapshot.
	SnapshotEntries uint64
	// RaftLogRetainBytes is how many bytes of entries a partition replica
	// applies between snapshots; its Raft log keeps one to two such
	// intervals. 0 leaves it to SnapshotEntries alone.
	RaftLogRetainBytes int64
	// RetentionCheckInterval is how often leaders apply retention.ms and
	// retention.bytes.
	RetentionCheckInterval time.Duration
	// ProducerIDExpiration is how long an idempotent producer may be idle
	// before its partitions forget it (Kafka's producer.id.expiration.ms);
	// negative never forgets one.
	ProducerIDExpiration time.Duration
	// ProducerIDExpirationCheckInterval is how often leaders look for such
	// producers (Kafka's producer.id.expiration.check.interval.ms).
	ProducerIDExpirationCheckInterval time.Duration
	// ReplicaLagMax is how long a follower may go without reaching its
	// leader's log end and still count as in sync (Kafka's
	// replica.lag.time.max.ms).
	ReplicaLagMax time.Duration
	// ControlledShutdownTimeout bounds how long a stopping broker tries to
	// hand the leadership of its groups to other voters; 0 stops at once.
	ControlledShutdownTimeout time.Duration
	// FollowerThrottledRate and LeaderThrottledRate bound, in bytes per
	// second, what replicas catching up fetch and serve (package replica); 0
	// is no bound. Values set at run time through the Kafka admin API take
	// precedence.
	FollowerThrottledRate, LeaderThrottledRate int64
	// LogCleanerInterval is how often every replica of a compacted topic
	// checks whether its log needs a compaction pass.
	LogCleanerInterval time.Duration
	Logger             *slog.Logger
}

// ParseVoters reads "0=host:port,1=host:port,..." into a map of broker id to
// Raft address.
func ParseVoters(s string) (map[int32]string, error) {
	out := map[int32]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "=")
		n, err := strconv.ParseInt(id, 10, 32)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("metadata voter %q: want id=host:port", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("metadata voter %q: %v", part, err)
		}
		out[int32(n)] = addr
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no metadata voters")
	}
	return out, nil
}

func (c *Config) isVoter() bool {
	_, ok := c.MetadataVoters[c.ID]
	return ok
}

func (c *Config) validate() error {
	if c.ID < 0 {
		return fmt.Errorf("broker id must be at least 0")
	}
	if c.DataDir == "" {
		return fmt.Errorf("a data directory is required")
	}
	if len(c.MetadataVoters) == 0 {
		return fmt.Errorf("metadata voters are required")
	}
	if len(c.Listeners) == 0 {
		return fmt.Errorf("a Kafka listener is required")
	}
	switch inter, p := c.Listeners[0].Name, c.Listeners[0].Protocol; {
	case p == security.SSL:
		return fmt.Errorf("the inter-broker listener %s (the first) must be PLAINTEXT, SASL_PLAINTEXT or SASL_SSL: brokers do not authenticate to each other with certificates", inter)
	case p.SASL() && (c.InterBrokerUser == "" || c.ScramUsersDir == ""):
		return fmt.Errorf("the inter-broker listener %s (the first) is %s: the brokers authenticate on it as --inter-broker-user, whose password is in --scram-users-dir", inter, p)
	case p == security.SASLSSL && c.InterBrokerCAFile == "":
		return fmt.Errorf("the inter-broker listener %s (the first) is SASL_SSL: --inter-broker-ssl-ca-file names the CA the brokers trust for its certificate", inter)
	case p != security.SASLSSL && c.InterBrokerCAFile != "":
		return fmt.Errorf("--inter-broker-ssl-ca-file needs a SASL_SSL inter-broker listener (the first); %s is %s", inter, p)
	case p.SASL():
	case c.InterBrokerUser != "":
		return fmt.Errorf("--inter-broker-user needs a SASL_PLAINTEXT or SASL_SSL inter-broker listener (the first); %s is PLAINTEXT", inter)
	case c.Authorizer.Enabled && len(c.Listeners) < 2:
		return fmt.Errorf("with the ACL authorizer, clients need a listener other than the PLAINTEXT inter-broker one (the first), which is trusted: give --listeners two")
	}
	if _, ok := c.MetadataVoters[c.ID]; !ok && len(c.JoinAddresses) == 0 {
		ids := make([]int, 0, len(c.MetadataVoters))
		for id := range c.MetadataVoters {
			ids = append(ids, int(id))
		}
		sort.Ints(ids)
		return fmt.Errorf("broker %d is not among the metadata voters %v, so it needs join addresses to be added as an observer", c.ID, ids)
	}
	if len(c.MetadataVoters) > 1 && len(c.JoinAddresses) == 0 {
		return fmt.Errorf("with %d metadata voters, --join must name their HTTP addresses: a voter that starts on an empty data directory asks the others whether the cluster exists", len(c.MetadataVoters))
	}
	if c.RTT <= 0 {
		c.RTT = replica.DefaultRTT
	}
	if c.QuotaWindowing.Samples < 2 || c.QuotaWindowing.Length <= 0 {
		c.QuotaWindowing = quota.DefaultWindowing
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = 1
	}
	if c.SnapshotEntries == 0 {
		c.SnapshotEntries = 5000
	}
	switch c.RaftLogStore {
	case "":
		c.RaftLogStore = RaftLogWAL
	case RaftLogWAL, RaftLogPebble:
	default:
		return fmt.Errorf("unknown Raft log store %q (wal or pebble)", c.RaftLogStore)
	}
	if c.RaftLogWriteBuffer <= 0 {
		c.RaftLogWriteBuffer = 128 << 20
	}
	if c.ReplicaLagMax <= 0 {
		c.ReplicaLagMax = 10 * time.Second
	}
	if c.LogCleanerInterval <= 0 {
		c.LogCleanerInterval = 15 * time.Second
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = 30 * time.Second
	}
	if c.ProducerIDExpiration == 0 {
		c.ProducerIDExpiration = 24 * time.Hour
	}
	if c.ProducerIDExpirationCheckInterval <= 0 {
		c.ProducerIDExpirationCheckInterval = 10 * time.Minute
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 100 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
