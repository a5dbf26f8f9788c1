// Command raftka-broker runs one Raftka broker: a Kafka-protocol server whose
// partitions are each a Raft group.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/raftka/raftka/broker/node"
	"github.com/raftka/raftka/broker/raftlog"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/broker/security"
)

func main() {
	err := run(os.Args[1:])
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		// --help asked for the usage, which went to stdout: done.
	case errors.As(err, new(usageError)):
		fmt.Fprintln(os.Stderr, "raftka-broker:", err)
		fmt.Fprintln(os.Stderr, "Run 'raftka-broker --help' for the flags.")
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "raftka-broker:", err)
		os.Exit(1)
	}
}

// usageError is a mistake in the command line: exit 2, as the Go flag
// package and the raftka tool exit for one.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func run(args []string) error {
	fs := flag.NewFlagSet("raftka-broker", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "Usage: raftka-broker [flags]\n\nRuns one Raftka broker. Every flag can also be set as an environment\nvariable RAFTKA_<FLAG> (upper case, dashes as underscores).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var o options
	o.define(fs)
	fs.SetOutput(io.Discard) // the usage goes to stdout when asked for, and a mistake is reported once
	if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		fs.SetOutput(os.Stdout)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if err := applyEnv(fs); err != nil {
		return err
	}
	cfg, err := o.config(fs)
	if err != nil {
		return err
	}
	b, err := node.Start(cfg)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		cfg.Logger.Info("shutting down", "signal", s.String())
		b.Close()
		return nil
	case err := <-b.Failed():
		b.Close()
		return err
	}
}

// options are the command's flags: most set the broker's Config as they
// are, the others are read into it by config.
type options struct {
	cfg                                             node.Config
	tls                                             security.TLSConfig
	id, defParts, defRF                             int
	idFromHost                                      bool
	listen, advertised, listeners, advListeners     string
	advByID, protocolMap, listenerSSL, listenerAuth string
	authorizer, superUsers                          string
	raftCA, raftCert, raftKey, voters, join         string
	logLevel, logFormat                             string
}

// define declares the flags.
func (o *options) define(fs *flag.FlagSet) {
	fs.IntVar(&o.id, "id", -1, "broker id, unique and stable (a StatefulSet ordinal); see --id-from-hostname")
	fs.BoolVar(&o.idFromHost, "id-from-hostname", false, "take the broker id from the host name's trailing -N, as a StatefulSet pod's name ends")
	fs.StringVar(&o.cfg.DataDir, "data-dir", "./data", "directory for the Raft log and partition segments")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9092", "address the Kafka listener binds, a single PLAINTEXT listener; --listeners replaces it")
	fs.StringVar(&o.advertised, "advertised-address", "", "host:port clients are told to connect to (default: --listen)")
	fs.StringVar(&o.listeners, "listeners", "", "Kafka listeners as NAME://host:port,... (Kafka's listeners); the first is the inter-broker listener, which must be PLAINTEXT, or SASL_PLAINTEXT or SASL_SSL with --inter-broker-user; replaces --listen")
	fs.StringVar(&o.advListeners, "advertised-listeners", "", "NAME://host:port,... clients of each listener are told to connect to (Kafka's advertised.listeners; default: each listener's bind address)")
	fs.StringVar(&o.advByID, "advertised-listeners-by-id", "", "ID=NAME://host:port[,NAME://host:port];ID=... per broker id, advertised listeners that replace --advertised-listeners' for that broker: the brokers of a StatefulSet share their flags, and each is reached from outside at an address of its own")
	fs.StringVar(&o.protocolMap, "listener-security-protocol-map", "", "NAME:PROTOCOL,... for --listeners, PROTOCOL being PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (Kafka's listener.security.protocol.map; default: a listener named after a protocol uses it)")
	fs.BoolVar(&o.cfg.SASL.PlainWithoutTLS, "sasl-plain-without-tls", false, "offer SASL PLAIN on SASL_PLAINTEXT listeners, where the password crosses the network unencrypted (SCRAM-SHA-256 and SCRAM-SHA-512 are always offered)")
	fs.DurationVar(&o.cfg.SASL.AuthenticationTimeout, "sasl-authentication-timeout", 10*time.Second, "how long a connection to a SASL listener may take to authenticate before it is closed")
	fs.StringVar(&o.tls.CertFile, "ssl-certificate-file", "", "PEM certificate (chain) that SSL and SASL_SSL listeners serve; read again within a second of a change, so a rotated Secret needs no restart")
	fs.StringVar(&o.tls.KeyFile, "ssl-key-file", "", "PEM private key of --ssl-certificate-file")
	fs.StringVar(&o.tls.CAFile, "ssl-ca-file", "", "PEM certificates that sign the client certificates SSL listeners accept (with --ssl-client-auth)")
	fs.StringVar(&o.listenerSSL, "listener-ssl-dirs", "", "NAME=DIR,... per listener, a directory holding tls.crt, tls.key and optionally ca.crt (a mounted kubernetes.io/tls Secret, as cert-manager writes it), served by that listener instead of --ssl-certificate-file, --ssl-key-file and --ssl-ca-file")
	fs.StringVar(&o.tls.ClientAuth, "ssl-client-auth", "none", "whether SSL listeners ask clients for a certificate, whose subject is then the connection's principal: none, requested or required (Kafka's ssl.client.auth)")
	fs.StringVar(&o.listenerAuth, "listener-ssl-client-auth", "", "NAME=MODE,... per SSL or SASL_SSL listener, --ssl-client-auth's none, requested or required for that listener alone (Kafka's listener.name.NAME.ssl.client.auth); a SASL_SSL listener then asks for a certificate as well as SASL, and the principal stays the SASL user (KIP-684)")
	fs.StringVar(&o.authorizer, "authorizer", "none", "acl: check every request against the ACLs kept in the metadata (kafka-acls.sh), Kafka's rules; clients then need a listener other than the inter-broker one (the first), which is trusted and must be reachable only by the brokers and the operator. none: every request is allowed")
	fs.StringVar(&o.superUsers, "super-users", "", "principals that may do anything with --authorizer acl, as User:NAME;User:NAME (Kafka's super.users)")
	fs.StringVar(&o.cfg.ScramUsersDir, "scram-users-dir", "", "directory of users' SCRAM-SHA-512 passwords, one file per user named after it (a mounted Secret): their credentials are set in the metadata, and set again whenever they no longer match the file, so a cluster can be administered before anyone could alter its credentials")
	fs.StringVar(&o.cfg.InterBrokerUser, "inter-broker-user", "", "user the brokers authenticate as (SCRAM-SHA-512) on a SASL_PLAINTEXT or SASL_SSL inter-broker listener, its password a file of --scram-users-dir; list it in --super-users")
	fs.StringVar(&o.cfg.InterBrokerCAFile, "inter-broker-ssl-ca-file", "", "PEM CA the brokers trust for a SASL_SSL inter-broker listener's certificate, which must name the host each broker advertises on it")
	fs.IntVar(&o.cfg.QuotaWindowing.Samples, "quota-window-num", 11, "samples over which client quotas measure rates (Kafka's quota.window.num)")
	fs.DurationVar(&o.cfg.QuotaWindowing.Length, "quota-window-size", time.Second, "length of each client quota sample (Kafka's quota.window.size.seconds)")
	fs.DurationVar(&o.cfg.SASL.SessionLifetime, "sasl-session-lifetime", 0, "how long a SASL authentication holds before the client must re-authenticate on its connection (Kafka's connections.max.reauth.ms, KIP-368); 0: for the connection's life")
	fs.StringVar(&o.cfg.RaftAddr, "raft-address", "127.0.0.1:19092", "host:port of this broker's Raft transport; must stay the same across restarts")
	fs.StringVar(&o.raftCA, "raft-tls-ca-file", "", "PEM CA that signs the brokers' Raft certificates: with --raft-tls-cert-file and --raft-tls-key-file, the Raft transport is mutual TLS and accepts only peers with a certificate the CA signed, naming the host of their --raft-address, and the HTTP endpoint serves HTTPS beside HTTP and its join and replica endpoints only to such peers. Every broker of a cluster must have it, or none")
	fs.StringVar(&o.raftCert, "raft-tls-cert-file", "", "PEM certificate this broker presents on the Raft transport")
	fs.StringVar(&o.raftKey, "raft-tls-key-file", "", "PEM key of --raft-tls-cert-file")
	fs.StringVar(&o.cfg.RaftListen, "raft-listen", "", "address the Raft transport binds, such as 0.0.0.0:9093 (default: --raft-address)")
	fs.StringVar(&o.voters, "metadata-voters", "", "metadata Raft group members as id=raft-host:port,... (at most 3; this broker must be one)")
	fs.StringVar(&o.join, "join", "", "HTTP host:port of the metadata voters, comma-separated: a broker that starts on an empty data directory asks them whether the cluster exists and joins it through them; required with more than one voter")
	fs.StringVar(&o.cfg.HTTPListen, "http-listen", "127.0.0.1:8080", "address for /metrics, /readyz and /safe-to-restart (empty disables)")
	fs.DurationVar(&o.cfg.RTT, "rtt", replica.DefaultRTT, "Raft tick: every group is ticked this often, and a leader heartbeats every tick or every fifth of its election timeout (0.5-1 s, or 5-10 ticks if longer); an idle partition group goes quiet after 20 election timeouts (10 s)")
	fs.StringVar(&o.cfg.Rack, "rack", "", "rack (zone) reported to clients")
	fs.BoolVar(&o.cfg.AutoCreateTopics, "auto-create-topics", false, "create unknown topics on metadata requests, like Kafka's auto.create.topics.enable")
	fs.IntVar(&o.defParts, "default-partitions", 1, "partitions of auto-created topics and of CreateTopics asking for the default")
	fs.IntVar(&o.defRF, "default-replication-factor", 1, "replication factor of auto-created topics and of CreateTopics asking for the default")
	fs.IntVar(&o.cfg.MaxConnections, "max-connections", 0, "Kafka client connections held at once, over every listener but the inter-broker one when there are others (it stays open to the brokers and the operator); past it the broker accepts no more until one closes (Kafka's max.connections). 0: half of what the open-file limit keeps beside partition replicas, a twentieth of the limit")
	fs.DurationVar(&o.cfg.TransactionMaxTimeout, "transaction-max-timeout", 15*time.Minute, "the longest transaction.timeout.ms a transactional producer may ask for; longer is refused with INVALID_TRANSACTION_TIMEOUT (Kafka's transaction.max.timeout.ms)")
	fs.DurationVar(&o.cfg.ConnectionsMaxIdle, "connections-max-idle", 10*time.Minute, "close a Kafka connection that has neither sent a request nor been answered for this long, so that vanished clients give back their --max-connections slot (Kafka's connections.max.idle.ms); 0 never")
	fs.Int64Var(&o.cfg.MinFreeBytes, "min-free-bytes", 256<<20, "refuse produce with KAFKA_STORAGE_ERROR when the data directory has less free space")
	fs.DurationVar(&o.cfg.GroupInitialRebalanceDelay, "group-initial-rebalance-delay", 3*time.Second, "wait for more members before the first rebalance of an empty group")
	fs.Uint64Var(&o.cfg.SnapshotEntries, "raft-snapshot-entries", 5000, "Raft entries a partition applies between snapshots; older entries are compacted, and a replica further behind catches up from a snapshot, fetching the records it lacks from its peers")
	fs.Int64Var(&o.cfg.RaftLogRetainBytes, "raft-log-retain-bytes", 4<<20, "bytes of Raft entries a partition replica applies between snapshots; its Raft log keeps one to two such intervals for lagging followers, and entries deleted before the log store's memtable flushes are written once (0: only --raft-snapshot-entries)")
	fs.StringVar(&o.cfg.RaftLogStore, "raft-log-store", "wal", "Raft log store: wal (one write-ahead log for all Raft groups; each entry written once) or pebble (Dragonboat's key-value store); a data directory keeps the store it was created with")
	fs.BoolVar(&o.cfg.PartitionFrames, "partition-frames", true, "with --raft-log-store wal: keep each partition's Raft entries in files of its own (its frame log) and serve its batches from there, so each produced byte is written once per replica; false writes every batch into the Raft log and again into the partition's segments")
	fs.IntVar(&o.cfg.RaftLogCopyBytes, "raft-log-copy-bytes", raftlog.DefaultCopyBytes, "with --raft-log-store wal and --partition-frames: a Raft log save of entries that come to at most this many bytes copies them into the Raft log's record and leaves the partition's frames to a later fsync, one fsync in place of two; a negative value never copies")
	fs.Int64Var(&o.cfg.RaftLogFileBytes, "raft-log-file-bytes", raftlog.DefaultFileBytes, "with --raft-log-store wal: the size at which the Raft log starts a new file; a file is deleted once none of its entries is live")
	fs.Int64Var(&o.cfg.RaftLogMaxBytes, "raft-log-max-bytes", 1<<30, "with --raft-log-store wal: above this many bytes in its files, every partition replica that applied entries since its last snapshot takes one and compacts its whole Raft log, which bounds the store with many busy partitions (0: no bound)")
	fs.Int64Var(&o.cfg.RaftLogWriteBuffer, "raft-log-write-buffer", 128<<20, "with --raft-log-store pebble: memtable bytes (up to 4 in memory while flushes lag); the larger, the more compacted entries die in it unwritten")
	fs.DurationVar(&o.cfg.RetentionCheckInterval, "retention-check-interval", 30*time.Second, "how often partition leaders apply retention.ms and retention.bytes")
	fs.DurationVar(&o.cfg.ProducerIDExpiration, "producer-id-expiration", 24*time.Hour, "how long an idempotent producer may be idle before its partitions forget it, which bounds their producer tables (Kafka's producer.id.expiration.ms; negative: never)")
	fs.DurationVar(&o.cfg.ProducerIDExpirationCheckInterval, "producer-id-expiration-check-interval", 10*time.Minute, "how often partition leaders look for idle producers to forget (Kafka's producer.id.expiration.check.interval.ms)")
	fs.DurationVar(&o.cfg.ControlledShutdownTimeout, "controlled-shutdown-timeout", 10*time.Second, "on SIGTERM, how long to try handing the leadership of every Raft group this broker leads to another in-sync voter before stopping (a rolling restart then costs producers a leader transfer, not an election timeout); 0 stops at once")
	fs.Int64Var(&o.cfg.FollowerThrottledRate, "follower-replication-throttled-rate", 0, "bytes per second this broker's replicas may fetch from their peers while catching up (after a move or a lost disk); 0 is no bound; follower.replication.throttled.rate set through the admin API takes precedence")
	fs.Int64Var(&o.cfg.LeaderThrottledRate, "leader-replication-throttled-rate", 0, "bytes per second this broker may serve to other brokers' replicas catching up; 0 is no bound; leader.replication.throttled.rate set through the admin API takes precedence")
	fs.DurationVar(&o.cfg.ReplicaLagMax, "replica-lag-max", 10*time.Second, "how long a follower may go without reaching its leader's log end and still count as in sync for min.insync.replicas (Kafka's replica.lag.time.max.ms)")
	fs.DurationVar(&o.cfg.LogCleanerInterval, "log-cleaner-interval", 15*time.Second, "how often each replica of a compacted topic (cleanup.policy=compact) checks whether its log needs a compaction pass")
	fs.BoolVar(&o.cfg.EnablePprof, "enable-pprof", false, "serve Go's /debug/pprof on the HTTP listener")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "text or json")
}

// config reads the flags that are not the Config's as they are into it.
func (o *options) config(fs *flag.FlagSet) (node.Config, error) {
	cfg := o.cfg
	logger, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		return cfg, err
	}
	cfg.Logger = logger
	if o.idFromHost {
		host, _ := os.Hostname()
		if o.id, err = ordinal(host); err != nil {
			return cfg, err
		}
	}
	if o.id < 0 {
		return cfg, fmt.Errorf("--id or --id-from-hostname is required")
	}
	cfg.ID, cfg.DefaultPartitions, cfg.DefaultReplicationFactor = int32(o.id), int32(o.defParts), int16(o.defRF)
	if o.authorizer != "none" && o.authorizer != "acl" {
		return cfg, fmt.Errorf("--authorizer %q: want none or acl", o.authorizer)
	}
	cfg.Authorizer = security.AuthorizerConfig{Enabled: o.authorizer == "acl", SuperUsers: security.ParseSuperUsers(o.superUsers)}
	if err := o.readListeners(fs, &cfg); err != nil {
		return cfg, err
	}
	switch set := []bool{o.raftCA != "", o.raftCert != "", o.raftKey != ""}; {
	case set[0] && set[1] && set[2]:
		cfg.RaftTLS = &security.RaftTLS{CAFile: o.raftCA, CertFile: o.raftCert, KeyFile: o.raftKey}
	case set[0] || set[1] || set[2]:
		return cfg, fmt.Errorf("--raft-tls-ca-file, --raft-tls-cert-file and --raft-tls-key-file go together")
	}
	if o.voters == "" {
		o.voters = fmt.Sprintf("%d=%s", o.id, cfg.RaftAddr)
	}
	if cfg.MetadataVoters, err = node.ParseVoters(o.voters); err != nil {
		return cfg, err
	}
	cfg.JoinAddresses = splitList(o.join)
	return cfg, nil
}

// readListeners reads the Kafka listeners and their TLS into cfg.
func (o *options) readListeners(fs *flag.FlagSet, cfg *node.Config) error {
	mine, err := advertisedByID(o.advByID, o.id)
	if err != nil {
		return err
	}
	advListeners := replaceAdvertised(o.advListeners, mine)
	if cfg.Listeners, err = parseListenerFlags(fs, o.listen, o.advertised, o.listeners, advListeners, o.protocolMap); err != nil {
		return err
	}
	cfg.TLS = o.tls
	if cfg.ListenerTLS, err = parseListenerSSLDirs(o.listenerSSL, cfg.Listeners, o.tls); err != nil {
		return err
	}
	return parseListenerClientAuth(o.listenerAuth, cfg.Listeners, o.tls, cfg.ListenerTLS)
}

// newLogger is the broker's logger at --log-level, in --log-format.
func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if format == "json" {
		handler = slog.NewJSONHandler(os.Stderr, opts)
	}
	return slog.New(handler), nil
}

// parseListenerFlags reads the Kafka listeners: --listeners and its
// companions, or the single PLAINTEXT listener of --listen and
// --advertised-address.
func parseListenerFlags(fs *flag.FlagSet, listen, advertised, listeners, advertisedListeners, protocolMap string) ([]security.Listener, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if listeners == "" {
		if advertisedListeners != "" || protocolMap != "" {
			return nil, fmt.Errorf("--advertised-listeners and --listener-security-protocol-map need --listeners")
		}
		if advertised == "" {
			advertised = listen
		}
		return security.ParseListeners("PLAINTEXT://"+listen, "PLAINTEXT://"+advertised, "")
	}
	if set["listen"] || set["advertised-address"] {
		return nil, fmt.Errorf("--listen and --advertised-address name a single listener: give --listeners or them, not both")
	}
	return security.ParseListeners(listeners, advertisedListeners, protocolMap)
}

// applyEnv sets every flag not given on the command line from RAFTKA_<NAME>.
func applyEnv(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		env := "RAFTKA_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", env, e)
			}
		}
	})
	return err
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func ordinal(host string) (int, error) {
	i := strings.LastIndex(host, "-")
	if i < 0 {
		return 0, fmt.Errorf("host name %q has no -N suffix", host)
	}
	n, err := strconv.Atoi(host[i+1:])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("host name %q has no -N suffix", host)
	}
	return n, nil
}

// parseListenerSSLDirs reads --listener-ssl-dirs: each named listener
// serves the tls.crt and tls.key of its directory, and checks client
// certificates against its ca.crt when there is one (else --ssl-ca-file's).
func parseListenerSSLDirs(s string, listeners []security.Listener, shared security.TLSConfig) (map[string]security.TLSConfig, error) {
	out := map[string]security.TLSConfig{}
	for _, part := range splitList(s) {
		name, dir, ok := strings.Cut(part, "=")
		name = strings.ToUpper(strings.TrimSpace(name))
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("--listener-ssl-dirs %q: want NAME=DIR", part)
		}
		if !slices.ContainsFunc(listeners, func(l security.Listener) bool { return l.Name == name }) {
			return nil, fmt.Errorf("--listener-ssl-dirs: %s is not a listener", name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--listener-ssl-dirs: listener %s is named twice", name)
		}
		files := shared
		files.CertFile, files.KeyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err == nil {
			files.CAFile = filepath.Join(dir, "ca.crt")
		}
		out[name] = files
	}
	return out, nil
}

// parseListenerClientAuth reads --listener-ssl-client-auth into the
// listeners' TLS settings: a listener without settings of its own gets the
// shared files with its own client authentication.
func parseListenerClientAuth(s string, listeners []security.Listener, shared security.TLSConfig, perListener map[string]security.TLSConfig) error {
	seen := map[string]bool{}
	for _, part := range splitList(s) {
		name, mode, ok := strings.Cut(part, "=")
		name = strings.ToUpper(strings.TrimSpace(name))
		i := slices.IndexFunc(listeners, func(l security.Listener) bool { return l.Name == name })
		switch {
		case !ok || name == "" || mode == "":
			return fmt.Errorf("--listener-ssl-client-auth %q: want NAME=MODE", part)
		case i < 0:
			return fmt.Errorf("--listener-ssl-client-auth: %s is not a listener", name)
		case !listeners[i].Protocol.TLS():
			return fmt.Errorf("--listener-ssl-client-auth: %s is a %s listener, without TLS", name, listeners[i].Protocol)
		case seen[name]:
			return fmt.Errorf("--listener-ssl-client-auth: listener %s is named twice", name)
		}
		seen[name] = true
		cfg, own := perListener[name]
		if !own {
			cfg = shared
		}
		cfg.ClientAuth, cfg.ListenerClientAuth = mode, true
		perListener[name] = cfg
	}
	return nil
}

// advertisedByID picks this broker's entry of --advertised-listeners-by-id.
func advertisedByID(s string, id int) (string, error) {
	for _, entry := range strings.Split(s, ";") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		key, listeners, ok := strings.Cut(entry, "=")
		n, err := strconv.Atoi(strings.TrimSpace(key))
		if !ok || err != nil || n < 0 {
			return "", fmt.Errorf("--advertised-listeners-by-id %q: want ID=NAME://host:port[,...]", entry)
		}
		if n == id {
			return listeners, nil
		}
	}
	return "", nil
}

// replaceAdvertised is base's advertised listeners with those mine names
// replaced by mine's.
func replaceAdvertised(base, mine string) string {
	name := func(entry string) string {
		n, _, _ := strings.Cut(entry, "://")
		return strings.ToUpper(strings.TrimSpace(n))
	}
	replaced := map[string]bool{}
	for _, e := range splitList(mine) {
		replaced[name(e)] = true
	}
	var out []string
	for _, e := range splitList(base) {
		if !replaced[name(e)] {
			out = append(out, e)
		}
	}
	return strings.Join(append(out, splitList(mine)...), ",")
}
