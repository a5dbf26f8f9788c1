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

// javaClassPath returns the class path of the Java Kafka client and the
// libraries it runs with: $RAFTKA_JAVA_CLASSPATH (make test sets it), or
// what hack/java-kafka-client.sh builds.
func javaClassPath(t *testing.T) string {
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatal("java is not installed: apt-get install default-jdk-headless (.ci/run does)")
	}
	if cp := os.Getenv("RAFTKA_JAVA_CLASSPATH"); cp != "" {
		return cp
	}
	out, err := exec.Command(filepath.Join("..", "..", "hack", "java-kafka-client.sh")).Output()
	if err != nil {
		t.Fatalf("hack/java-kafka-client.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// javaArgs are the java command's arguments to run testdata/java/Client.java
// with args, logging the client's warnings and errors to stderr.
func javaArgs(cp string, args ...string) []string {
	return append([]string{"-cp", cp, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "Client.java"}, args...)
}

// TestJavaProducerThroughLeaderKills runs the Java producer with its
// defaults (idempotent, acks=all, five batches in flight, retries until its
// delivery timeout) while partition leaders are SIGKILLed: its handling of
// NOT_LEADER_OR_FOLLOWER, of timed-out requests and of sequence numbers
// across leader changes must leave every acknowledged record stored once, at
// its acknowledged offset, in order; also after all brokers die at once.
func TestJavaProducerThroughLeaderKills(t *testing.T) {
	cp := javaClassPath(t)
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	min2 := "2"
	c.CreateTopic("java-ledger", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	produceThroughKills(t, c, "java-ledger", javaProducer(c, cp), func(*brokertest.Ledger) {
		time.Sleep(2 * time.Second)
		killPartitionLeaders(t, c, "java-ledger")
	})
}

// javaProducer runs Client.java's produce-until-eof, which prints a line per
// outcome, and closes its standard input when stop closes.
func javaProducer(c *brokertest.Cluster, cp string) produceFunc {
	return func(acks *brokertest.Ledger, topic string, partitions int32, stop <-chan struct{}) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "java", javaArgs(cp, "produce-until-eof")...)
		cmd.Dir = filepath.Join("testdata", "java")
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
				return sent, fmt.Errorf("unexpected line from the Java producer: %q", lines.Text())
			}
			sent++
		}
		if err := cmd.Wait(); err != nil {
			return sent, fmt.Errorf("java: %v\n%s", err, stderr.String())
		}
		return sent, nil
	}
}

// TestJavaClient runs the Java Kafka client, the reference implementation
// of the protocol (kafka-clients of the Apache Kafka 3.4 line), against the
// brokers: topic creation, a producer with its defaults (idempotent,
// acks=all, five batches in flight) and zstd, a consumer group with the
// cooperative-sticky assignor committing by hand, and the admin calls
// Kafka's command-line tools make. What it did is read back with franz-go.
func TestJavaClient(t *testing.T) {
	cp := javaClassPath(t)
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	run := runClient(t, c, "java", filepath.Join("testdata", "java"), "java", javaArgs(cp)...)
	run.check(t, clientRecords)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := c.Admin()
	starts, err := adm.ListStartOffsets(ctx, "java")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("java", 0); o.Offset != 10 {
		t.Fatalf("partition 0 starts at %d after DeleteRecords before 10", o.Offset)
	}
	ends, err := adm.ListEndOffsets(ctx, "java")
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, "java-group")
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	ends.Each(func(o kadmOffset) {
		want += int(o.Offset)
		if got, _ := committed.Lookup("java", o.Partition); got.At != o.Offset {
			t.Errorf("partition %d: group committed %d, end offset %d", o.Partition, got.At, o.Offset)
		}
	})
	want -= 10

	cl := c.Client(kgo.ConsumeTopics("java"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	records, err := brokertest.ConsumeN(ctx, cl, want)
	if err != nil {
		t.Fatalf("read %d of %d records back: %v", len(records), want, err)
	}
	for _, r := range records {
		if r.ProducerID < 0 || r.Attrs.CompressionType() != 4 {
			t.Fatalf("record %s: producer id %d, codec %d: want an idempotent zstd batch", r.Value, r.ProducerID, r.Attrs.CompressionType())
		}
	}

	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("java-deleted") {
		t.Error("java-deleted still exists after DeleteTopics")
	}
	if n := len(topics["java-grown"].Partitions); n != 4 {
		t.Errorf("java-grown has %d partitions after CreatePartitions to 4", n)
	}
	// Another broker's metadata replica applies the change a moment later,
	// as a Kafka broker learns it from the controller.
	retention := ""
	waitFor(t, 10*time.Second, "java-grown's retention.ms of 3600000 on the broker asked", func() bool {
		configs, err := adm.DescribeTopicConfigs(ctx, "java-grown")
		if err != nil {
			t.Fatal(err)
		}
		grown, err := configs.On("java-grown", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range grown.Configs {
			if cfg.Key == "retention.ms" {
				retention = cfg.MaybeValue()
			}
		}
		return retention == "3600000"
	})
}
