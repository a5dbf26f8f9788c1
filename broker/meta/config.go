package meta

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/raftka/raftka/broker/growth"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicConfig describes one supported topic config key.
type TopicConfig struct {
	Name     string
	Default  string
	validate func(string) bool
}

func atLeast(min int64) func(string) bool {
	return func(v string) bool {
		n, err := strconv.ParseInt(v, 10, 64)
		return err == nil && n >= min
	}
}

func oneOf(values ...string) func(string) bool {
	return func(v string) bool {
		for _, ok := range values {
			if v == ok {
				return true
			}
		}
		return false
	}
}

// Topic config keys the broker honours.
const (
	ConfigRetentionMs        = "retention.ms"
	ConfigRetentionBytes     = "retention.bytes"
	ConfigMinInsyncReplicas  = "min.insync.replicas"
	ConfigMaxMessageBytes    = "max.message.bytes"
	ConfigSegmentBytes       = "segment.bytes"
	ConfigSegmentMs          = "segment.ms"
	ConfigCleanupPolicy      = "cleanup.policy"
	ConfigTimestampType      = "message.timestamp.type"
	ConfigCompressionType    = "compression.type"
	ConfigUncleanLeaderElect = "unclean.leader.election.enable"
	ConfigDeleteRetentionMs  = "delete.retention.ms"
	ConfigMinCompactionLagMs = "min.compaction.lag.ms"
	ConfigMaxCompactionLagMs = "max.compaction.lag.ms"
	ConfigMinCleanableRatio  = "min.cleanable.dirty.ratio"
	// Which replicas Kafka's throttles apply to: kafka-reassign-partitions
	// sets them with --throttle. Accepted and shown; the broker throttles
	// every replica catching up (see the broker configs below).
	ConfigLeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	ConfigFollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// Broker config keys that can be set at run time, for one broker or, with
// an empty broker name, for every broker.
const (
	// BrokerConfigLeaderThrottledRate bounds the bytes per second a broker
	// serves to replicas catching up from it.
	BrokerConfigLeaderThrottledRate = "leader.replication.throttled.rate"
	// BrokerConfigFollowerThrottledRate bounds the bytes per second a
	// broker's replicas fetch from their peers while catching up.
	BrokerConfigFollowerThrottledRate = "follower.replication.throttled.rate"
)

var brokerConfigs = map[string]func(string) bool{
	BrokerConfigLeaderThrottledRate:   atLeast(0),
	BrokerConfigFollowerThrottledRate: atLeast(0),
}

// BrokerConfigNames returns the broker config keys that can be set.
func BrokerConfigNames() []string {
	return []string{BrokerConfigFollowerThrottledRate, BrokerConfigLeaderThrottledRate}
}

var throttledReplicas = regexp.MustCompile(`^(\*|\d+:\d+(,\d+:\d+)*)?$`)

// Timestamp types, as message.timestamp.type names them.
const (
	TimestampCreateTime    = "CreateTime"
	TimestampLogAppendTime = "LogAppendTime"
)

// Cleanup policies, as cleanup.policy lists them.
const (
	CleanupDelete  = "delete"
	CleanupCompact = "compact"
)

var topicConfigs = map[string]TopicConfig{}

func init() {
	for _, c := range []TopicConfig{
		{ConfigRetentionMs, "604800000", atLeast(-1)},
		{ConfigRetentionBytes, "-1", atLeast(-1)},
		{ConfigMinInsyncReplicas, "1", atLeast(1)},
		{ConfigMaxMessageBytes, "1048588", atLeast(0)},
		{ConfigSegmentBytes, "134217728", atLeast(1 << 20)},
		{ConfigSegmentMs, "604800000", atLeast(1)},
		{ConfigCleanupPolicy, CleanupDelete, oneOf("delete", "compact", "compact,delete", "delete,compact")},
		{ConfigDeleteRetentionMs, "86400000", atLeast(0)},
		{ConfigMinCompactionLagMs, "0", atLeast(0)},
		{ConfigMaxCompactionLagMs, "9223372036854775807", atLeast(1)},
		{ConfigMinCleanableRatio, "0.5", ratio},
		{ConfigTimestampType, TimestampCreateTime, oneOf(TimestampCreateTime, TimestampLogAppendTime)},
		// Kafka's names; a batch in another codec is compressed again by
		// the leader (partition.Recompress).
		{ConfigCompressionType, "producer", oneOf("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")},
		// Raft never elects a stale leader: there is nothing to enable.
		{ConfigUncleanLeaderElect, "false", oneOf("false")},
		{ConfigLeaderThrottledReplicas, "", throttledReplicas.MatchString},
		{ConfigFollowerThrottledReplicas, "", throttledReplicas.MatchString},
		// Ordered growth (growth.go), on by default.
		{ConfigGrowthOrdered, "true", oneOf("true", "false")},
		{ConfigGrowthQuietMs, "5000", atLeast(0)},
		{ConfigGrowthMaxHoldMs, "300000", atLeast(0)},
		{ConfigGrowthGroupWindow, "86400000", atLeast(0)},
		{ConfigGrowthPartitioner, string(growth.Murmur2), oneOf(growth.Partitioners...)},
	} {
		topicConfigs[c.Name] = c
	}
}

func ratio(v string) bool {
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && f >= 0 && f <= 1
}

// HasCleanupPolicy reports whether the topic's cleanup.policy includes
// policy.
func (t *Topic) HasCleanupPolicy(policy string) bool {
	for _, p := range strings.Split(t.Value(ConfigCleanupPolicy), ",") {
		if p == policy {
			return true
		}
	}
	return false
}

// Float returns a fractional config value.
func (t *Topic) Float(name string) float64 {
	f, _ := strconv.ParseFloat(t.Value(name), 64)
	return f
}

// TopicConfigNames returns the supported keys, sorted.
func TopicConfigNames() []string {
	names := make([]string, 0, len(topicConfigs))
	for n := range topicConfigs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ConfigDefault returns a key's default and whether the key is supported.
func ConfigDefault(name string) (string, bool) {
	c, ok := topicConfigs[name]
	return c.Default, ok
}

// ValidateConfigs rejects unknown keys and bad values.
func ValidateConfigs(configs map[string]string, rf int16) error {
	for k, v := range configs {
		c, ok := topicConfigs[k]
		if !ok || !c.validate(v) {
			return kerr.InvalidConfig
		}
	}
	if v, ok := configs[ConfigMinInsyncReplicas]; ok {
		if n, _ := strconv.Atoi(v); n > int(rf) {
			return kerr.InvalidConfig
		}
	}
	return nil
}

// Value returns a topic's config value or its default.
func (t *Topic) Value(name string) string {
	if v, ok := t.Configs[name]; ok {
		return v
	}
	return topicConfigs[name].Default
}

// Int returns a numeric config value.
func (t *Topic) Int(name string) int64 {
	n, _ := strconv.ParseInt(t.Value(name), 10, 64)
	return n
}

var legalTopicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// ValidateTopicName applies Kafka's rules for topic names.
func ValidateTopicName(name string) error {
	if !legalTopicName.MatchString(name) || name == "." || name == ".." {
		return kerr.InvalidTopicException
	}
	return nil
}
