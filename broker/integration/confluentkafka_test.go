package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
)

// confluentKafkaDir is where testdata/confluent-kafka/client.py runs; it
// fails t unless Debian's python3-confluent-kafka (librdkafka) is there.
func confluentKafkaDir(t *testing.T) string {
	t.Helper()
	if err := exec.Command(debianPython, "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatal("confluent-kafka is not installed: apt-get install python3-confluent-kafka (hack/test-deps.sh does)")
	}
	return filepath.Join("testdata", "confluent-kafka")
}

// TestLibrdkafkaProducerThroughLeaderKills runs librdkafka's idempotent
// producer (acks=all, five requests in flight, retries until its delivery
// timeout) while partition leaders are SIGKILLed: its handling of
// NOT_LEADER_OR_FOLLOWER, of timed-out requests and of sequence numbers
// across leader changes must leave every acknowledged record stored once,
// at its acknowledged offset, in order; also after all brokers die at once.
func TestLibrdkafkaProducerThroughLeaderKills(t *testing.T) {
	dir := confluentKafkaDir(t)
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	min2 := "2"
	c.CreateTopic("librdkafka-ledger", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	produceThroughKills(t, c, "librdkafka-ledger", librdkafkaLedgerProducer(c, dir), func(*brokertest.Ledger) {
		time.Sleep(2 * time.Second)
		killPartitionLeaders(t, c, "librdkafka-ledger")
	})
}

// librdkafkaLedgerProducer runs client.py's produce-until-eof, which
// prints a line per outcome, and closes its standard input when stop
// closes.
func librdkafkaLedgerProducer(c *brokertest.Cluster, dir string) produceFunc {
	return func(acks *brokertest.Ledger, topic string, partitions int32, stop <-chan struct{}) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, debianPython, "client.py", "produce-until-eof")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "BROKERS="+strings.Join(c.AllAddrs(), ","), "TOPIC="+topic, "PARTITIONS="+strconv.Itoa(int(partitions)))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return 0, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		go func() {
			<-stop
			stdin.Close()
		}()
		sent := 0
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			f := strings.SplitN(lines.Text(), " ", 4)
			switch {
			case f[0] == "ack" && len(f) == 4:
				p, _ := strconv.ParseInt(f[1], 10, 32)
				o, _ := strconv.ParseInt(f[2], 10, 64)
				acks.Record(&kgo.Record{Partition: int32(p), Offset: o, Value: []byte(f[3])}, nil)
			case f[0] == "fail":
				acks.Record(nil, errors.New(lines.Text()))
			default:
				return sent, fmt.Errorf("unexpected line from librdkafka's producer: %q", lines.Text())
			}
			sent++
		}
		if err := cmd.Wait(); err != nil {
			return sent, fmt.Errorf("client.py: %v\n%s", err, stderr.String())
		}
		return sent, nil
	}
}

// TestConfluentKafkaClient runs librdkafka, the C client under
// confluent-kafka's Python, Go and .NET clients and kcat, against the
// brokers: topic creation, an idempotent producer with zstd, a consumer
// group with the cooperative-sticky assignor committing by hand, and its
// admin calls. What it did is read back with franz-go.
func TestConfluentKafkaClient(t *testing.T) {
	dir := confluentKafkaDir(t)
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	run := runClient(t, c, "confluent", dir, debianPython, "client.py")
	run.check(t, clientRecords)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := c.Client(kgo.ConsumeTopics("confluent"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	records, err := brokertest.ConsumeN(ctx, cl, clientRecords)
	if err != nil {
		t.Fatalf("read %d of %d records back: %v", len(records), clientRecords, err)
	}
	for _, r := range records {
		if r.ProducerID < 0 || r.Attrs.CompressionType() != 4 {
			t.Fatalf("record %s: producer id %d, codec %d: want an idempotent zstd batch", r.Value, r.ProducerID, r.Attrs.CompressionType())
		}
	}
	adm := c.Admin()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("confluent-deleted") {
		t.Error("confluent-deleted still exists after DeleteTopics")
	}
	if n := len(topics["confluent-grown"].Partitions); n != 4 {
		t.Errorf("confluent-grown has %d partitions after CreatePartitions to 4", n)
	}
	// Another broker's metadata replica applies the change a moment later,
	// as a Kafka broker learns it from the controller.
	waitFor(t, 10*time.Second, "confluent-grown's retention.ms of 3600000 on the broker asked", func() bool {
		configs, err := adm.DescribeTopicConfigs(ctx, "confluent-grown")
		if err != nil {
			t.Fatal(err)
		}
		grown, err := configs.On("confluent-grown", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range grown.Configs {
			if cfg.Key == "retention.ms" {
				return cfg.MaybeValue() == "3600000"
			}
		}
		return false
	})
}
