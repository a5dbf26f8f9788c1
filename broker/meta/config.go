package meta

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/raftka/raftka/broker/growth"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicConfig describes one supported topic config key.
type TopicConfig struct {
	Name    string
	Default string
	// check says what is wrong with a value, "" for nothing.
	check func(string) string
}

func atLeast(min int64) func(string) string {
	return func(v string) string {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < min {
			return fmt.Sprintf("want a whole number of at least %d", min)
		}
		return ""
	}
}

func oneOf(values ...string) func(string) string {
	return func(v string) string {
		if slices.Contains(values, v) {
			return ""
		}
		return "want one of " + strings.Join(values, ", ")
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

var brokerConfigs = map[string]func(string) string{
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
		{ConfigLeaderThrottledReplicas, "", throttled},
		{ConfigFollowerThrottledReplicas, "", throttled},
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

func ratio(v string) string {
	if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 || f > 1 {
		return "want a number from 0 to 1"
	}
	return ""
}

func throttled(v string) string {
	if !throttledReplicas.MatchString(v) {
		return "want * or partition:broker pairs, comma-separated"
	}
	return ""
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
	if ConfigProblem(configs, rf) != "" {
		return kerr.InvalidConfig
	}
	return nil
}

// ConfigProblem says what ValidateConfigs refuses in a topic's configs,
// naming the key, as Kafka's error message does; "" for nothing. Keys are
// looked at in order, so the answer is the same on every broker.
func ConfigProblem(configs map[string]string, rf int16) string {
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		v := configs[k]
		c, ok := topicConfigs[k]
		if !ok {
			return fmt.Sprintf("unknown topic config %s (raftka topic describe lists those a topic has)", k)
		}
		if why := c.check(v); why != "" {
			return fmt.Sprintf("invalid value %q for %s: %s", v, k, why)
		}
	}
	if v, ok := configs[ConfigMinInsyncReplicas]; ok {
		if n, _ := strconv.Atoi(v); n > int(rf) {
			return fmt.Sprintf("%s %d is above the replication factor %d: no acks=all write could succeed", ConfigMinInsyncReplicas, n, rf)
		}
	}
	return ""
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
