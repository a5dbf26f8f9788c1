// Command consumer is the example workload of a ConsumerGroup: a franz-go group
// consumer that processes records at a bounded rate and commits what it
// processed (at-least-once). The operator scales its Deployment with the
// group's lag; the end-to-end test runs it as raftka/consumer-example.
//
// Configuration, from the environment:
//
//	BOOTSTRAP_SERVERS   comma-separated host:port list (required)
//	GROUP_ID            consumer group id (required)
//	TOPIC               comma-separated topics (required)
//	RECORDS_PER_SECOND  processing rate of this consumer; 0 means as fast as it can
//	OUTPUT_TOPIC        when set, each processed record is produced there (its key
//	                    and value, its source partition and offset as headers) and
//	                    acknowledged by all in-sync replicas before its offset is
//	                    committed: a consume-transform-produce pipeline, at least once
//
// and, for a listener that is not PLAINTEXT, Kafka's client settings:
//
//	SECURITY_PROTOCOL     PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (inferred when unset)
//	SASL_MECHANISM        SCRAM-SHA-512 (the default), SCRAM-SHA-256 or PLAIN
//	SASL_USERNAME         a User's username, and SASL_PASSWORD its password
//	SSL_CA_FILE           PEM certificates to trust (the cluster's ca.crt)
//	SSL_CERTIFICATE_FILE  a tls User's user.crt, and SSL_KEY_FILE its user.key
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/internal/clientsecurity"
)

type config struct {
	brokers          []string
	group            string
	topics           []string
	recordsPerSecond int
	outputTopic      string
	security         clientsecurity.Settings
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, log, cfg); err != nil {
		log.Error("consumer stopped", "error", err)
		os.Exit(1)
	}
}

func configFromEnv(getenv func(string) string) (config, error) {
	cfg := config{
		brokers:     splitList(getenv("BOOTSTRAP_SERVERS")),
		group:       getenv("GROUP_ID"),
		topics:      splitList(getenv("TOPIC")),
		outputTopic: strings.TrimSpace(getenv("OUTPUT_TOPIC")),
		security: clientsecurity.Settings{Protocol: getenv("SECURITY_PROTOCOL"), Mechanism: getenv("SASL_MECHANISM"),
			Username: getenv("SASL_USERNAME"), Password: getenv("SASL_PASSWORD"),
			CAFile: getenv("SSL_CA_FILE"), CertFile: getenv("SSL_CERTIFICATE_FILE"), KeyFile: getenv("SSL_KEY_FILE")},
	}
	if len(cfg.brokers) == 0 || cfg.group == "" || len(cfg.topics) == 0 {
		return cfg, fmt.Errorf("BOOTSTRAP_SERVERS, GROUP_ID and TOPIC are required")
	}
	if _, err := cfg.security.ClientOpts(); err != nil {
		return cfg, err
	}
	if s := getenv("RECORDS_PER_SECOND"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return cfg, fmt.Errorf("RECORDS_PER_SECOND: want a whole number >= 0, got %q", s)
		}
		cfg.recordsPerSecond = n
	}
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// run polls, processes and commits until ctx ends. Rebalances are held off
// while a polled batch is processed and committed, so a partition moves to
// another member only with its progress committed: at-least-once without
// re-processing more than one poll after a rebalance.
func run(ctx context.Context, log *slog.Logger, cfg config) error {
	security, err := cfg.security.ClientOpts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(security,
		kgo.SeedBrokers(cfg.brokers...),
		kgo.ConsumerGroup(cfg.group),
		kgo.ConsumeTopics(cfg.topics...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(time.Second),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close() // leaves the group, so its partitions move at once
	log.Info("consumer started", "group", cfg.group, "topics", cfg.topics, "recordsPerSecond", cfg.recordsPerSecond)

	var perRecord time.Duration
	if cfg.recordsPerSecond > 0 {
		perRecord = time.Second / time.Duration(cfg.recordsPerSecond)
	}
	processed := 0
	lastReport := time.Now()
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, 500)
		fetches.EachError(func(topic string, partition int32, err error) {
			if ctx.Err() == nil {
				log.Warn("fetch failed", "topic", topic, "partition", partition, "error", err)
			}
		})
		n := fetches.NumRecords()
		if n > 0 && perRecord > 0 {
			// The stand-in for real work: a consumer that is slower than its
			// producers builds lag, which is what the autoscaler acts on.
			select {
			case <-time.After(time.Duration(n) * perRecord):
			case <-ctx.Done():
				cl.AllowRebalance()
				return nil // uncommitted: the next owner processes them again
			}
		}
		if n > 0 && cfg.outputTopic != "" {
			if err := forward(ctx, cl, cfg.outputTopic, fetches); err != nil {
				cl.AllowRebalance()
				if ctx.Err() != nil {
					return nil // uncommitted: the next owner processes them again
				}
				return fmt.Errorf("produce to %s: %w", cfg.outputTopic, err)
			}
		}
		if n > 0 {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				log.Warn("commit failed", "error", err)
			}
			processed += n
		}
		cl.AllowRebalance()
		if time.Since(lastReport) >= 10*time.Second {
			log.Info("progress", "processed", processed)
			lastReport = time.Now()
		}
	}
	log.Info("consumer stopping", "processed", processed)
	return nil
}

// forward produces the polled records to topic and waits for their
// acknowledgements, so a committed offset never gets ahead of the output:
// a crash before the commit repeats output (at least once), never drops it.
func forward(ctx context.Context, cl *kgo.Client, topic string, fetches kgo.Fetches) error {
	var out []*kgo.Record
	fetches.EachRecord(func(r *kgo.Record) {
		out = append(out, &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: []kgo.RecordHeader{
			{Key: "partition", Value: []byte(strconv.Itoa(int(r.Partition)))},
			{Key: "offset", Value: []byte(strconv.FormatInt(r.Offset, 10))},
		}})
	})
	return cl.ProduceSync(ctx, out...).FirstErr()
}
