package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/brokertest"
)

// clientRun is what the clients in testdata (KafkaJS, kafka-python) report:
// records acknowledged, records consumed in order, the group's commits and
// the end offsets.
type clientRun struct {
	Acked int
	Seen  []struct {
		Partition  int32
		Offset     string
		Key, Value string
	}
	Committed []struct {
		Partition int32
		Offset    string
	}
	Ends []struct {
		Partition int32
		High      string
	}
}

// TestKafkaJS runs KafkaJS, a Node.js client with its own protocol code,
// against the brokers: topic creation, an idempotent acks=all producer, a
// consumer group committing by hand, and the admin's offset lookups.
func TestKafkaJS(t *testing.T) {
	runClient(t, brokertest.Start(t, brokertest.Options{Brokers: 3}), "kafkajs", kafkajsDir(t), "node", "client.js").check(t, clientRecords)
}

// kafkajsDir is where the KafkaJS scripts run, with KafkaJS installed.
func kafkajsDir(t *testing.T) string {
	dir := filepath.Join("testdata", "kafkajs")
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: apt-get install nodejs npm (.ci/run does)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs")); err != nil {
		t.Fatalf("KafkaJS is not installed: npm ci --prefix %s (make test does)", dir)
	}
	return dir
}

// clientRecords is how many records each client in testdata produces.
const clientRecords = 300

// runClient runs a client program in dir against the brokers of c, telling
// it their addresses, a topic named after it and the record count, and
// returns what it reports on stdout.
func runClient(t *testing.T, c *brokertest.Cluster, topic, dir, name string, args ...string) clientRun {
	t.Helper()
	return runClientWith(t, c.AllAddrs(), nil, topic, dir, name, args...)
}

// runClientWith runs a client program against brokers, with env added
// to its environment.
func runClientWith(t *testing.T, brokers, env []string, topic, dir, name string, args ...string) clientRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "BROKERS="+strings.Join(brokers, ","), "TOPIC="+topic, "COUNT="+strconv.Itoa(clientRecords)), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", topic, err, errb.String())
	}
	var run clientRun
	if err := json.Unmarshal(out.Bytes(), &run); err != nil {
		t.Fatalf("%s output: %v\n%s", topic, err, out.String())
	}
	return run
}

// check fails t unless every record was acknowledged and consumed once, in
// dense offsets per partition and in order per key, and the group committed
// every partition's end offset.
func (run clientRun) check(t *testing.T, count int) {
	t.Helper()
	if run.Acked != count {
		t.Fatalf("%d records acknowledged, want %d", run.Acked, count)
	}
	values := map[string]bool{}
	nextOffset := map[int32]int64{}
	lastOfKey := map[string]int{}
	for _, r := range run.Seen {
		if values[r.Value] {
			t.Fatalf("%s consumed twice", r.Value)
		}
		values[r.Value] = true
		off, _ := strconv.ParseInt(r.Offset, 10, 64)
		if off != nextOffset[r.Partition] {
			t.Fatalf("partition %d: offset %d after %d: offsets are not dense", r.Partition, off, nextOffset[r.Partition]-1)
		}
		nextOffset[r.Partition] = off + 1
		n, _ := strconv.Atoi(strings.TrimPrefix(r.Value, "v"))
		if prev, ok := lastOfKey[r.Key]; ok && n <= prev {
			t.Fatalf("key %s: v%d after v%d", r.Key, n, prev)
		}
		lastOfKey[r.Key] = n
	}
	if len(values) != count {
		t.Fatalf("consumed %d distinct records, want %d", len(values), count)
	}
	for _, e := range run.Ends {
		high, _ := strconv.ParseInt(e.High, 10, 64)
		if high != nextOffset[e.Partition] {
			t.Fatalf("partition %d: end offset %d, consumed up to %d", e.Partition, high, nextOffset[e.Partition])
		}
		committed := int64(-2)
		for _, co := range run.Committed {
			if co.Partition == e.Partition {
				committed, _ = strconv.ParseInt(co.Offset, 10, 64)
			}
		}
		if committed != high {
			t.Fatalf("partition %d: committed %d, want the end offset %d", e.Partition, committed, high)
		}
	}
}
