package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

// zooKeeperJar is Debian's ZooKeeper, which Burrow needs for its own
// coordination.
const zooKeeperJar = "/usr/share/java/zookeeper.jar"

// TestBurrowFollowsAGroupThroughConsumerOffsets runs Burrow (Debian's
// burrow), LinkedIn's lag monitor, as Kafka shops run it: it learns each
// group's commits by consuming __consumer_offsets and the partitions' ends
// from the brokers. Read from its HTTP API, a group that keeps up is OK,
// and once its consumer stops while records keep coming, it is not.
func TestBurrowFollowsAGroupThroughConsumerOffsets(t *testing.T) {
	burrow := needBurrow(t)
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("tracked", 2, 3, nil)
	api := startBurrow(t, burrow, c, startZooKeeper(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	producer := c.Client(kgo.DefaultProduceTopic("tracked"))
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			producer.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("v")}, nil)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	consumer := c.Client(kgo.ConsumerGroup("watched"), kgo.ConsumeTopics("tracked"), kgo.AutoCommitInterval(500*time.Millisecond))
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for ctx.Err() == nil {
			if consumer.PollFetches(ctx).IsClientClosed() {
				return
			}
		}
	}()
	status := func() string { s, _ := burrowStatus(t, api, "watched"); return s }
	waitFor(t, 90*time.Second, "Burrow to report the group OK while it keeps up", func() bool { return status() == "OK" })

	consumer.Close()
	<-consumed
	var lag int64
	waitFor(t, 90*time.Second, "Burrow to report the stopped group as not OK, with lag, while its lag grows", func() bool {
		var s string
		s, lag = burrowStatus(t, api, "watched")
		return s != "OK" && s != "" && s != "NOTFOUND" && lag > 0
	})
	t.Logf("Burrow's status of the stopped group: %s, lag %d", status(), lag)
}

func needBurrow(t *testing.T) string {
	t.Helper()
	burrow, err := exec.LookPath("Burrow")
	_, zkErr := os.Stat(zooKeeperJar)
	if err == nil && zkErr == nil {
		return burrow
	}
	if os.Getenv("RAFTKA_TEST_DEPS") != "" {
		t.Fatal("make test installed its Debian packages but finds no Burrow or ZooKeeper: apt-get install burrow zookeeper")
	}
	t.Skip("no Burrow or ZooKeeper (make test-deps installs Debian's burrow and zookeeper)")
	return ""
}

// startZooKeeper runs a ZooKeeper server on 127.0.0.1 for the test, and
// returns its address.
func startZooKeeper(t *testing.T) string {
	dir := t.TempDir()
	port := brokertest.FreePort(t)
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n",
		filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startHelper(t, dir, "zookeeper", "java", "-cp", zooKeeperJar, "org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg"))
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// Listening, even answering ruok, is not serving: a client that
	// connects before ZooKeeper runs is dropped ("ZooKeeperServer not
	// running"), and Burrow then gives up. srvr names the server's mode
	// once it serves.
	waitFor(t, 60*time.Second, "ZooKeeper to serve", func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := conn.Write([]byte("srvr")); err != nil {
			return false
		}
		reply, _ := io.ReadAll(conn)
		return strings.Contains(string(reply), "Mode: standalone")
	})
	return addr
}

// startBurrow runs Burrow against the cluster with short intervals, and
// returns its HTTP API's address.
func startBurrow(t *testing.T, burrow string, c *brokertest.Cluster, zookeeper string) string {
	dir := t.TempDir()
	api := "127.0.0.1:" + strconv.Itoa(brokertest.FreePort(t))
	servers := `"` + strings.Join(c.AllAddrs(), `", "`) + `"`
	cfg := fmt.Sprintf(`[general]
pidfile="%[1]s/burrow.pid"
[logging]
level="info"
[zookeeper]
servers=["%[2]s"]
root-path="/burrow"
[client-profile.raftka]
client-id="burrow"
kafka-version="2.1.0"
[cluster.local]
class-name="kafka"
servers=[%[3]s]
client-profile="raftka"
topic-refresh=2
offset-refresh=1
[consumer.local]
class-name="kafka"
cluster="local"
servers=[%[3]s]
client-profile="raftka"
[httpserver.default]
address="%[4]s"
[storage.default]
class-name="inmemory"
workers=4
intervals=3
expire-group=604800
min-distance=1
[evaluator.default]
class-name="caching"
expire-cache=1
`, dir, zookeeper, servers, api)
	if err := os.WriteFile(filepath.Join(dir, "burrow.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startHelper(t, dir, "Burrow", burrow, "-config-dir", dir)
	return api
}

// startHelper starts a helper process in dir, stopped when the test ends;
// its output is logged if the test fails.
func startHelper(t *testing.T, dir, name string, args ...string) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		out.Close()
		if t.Failed() {
			if log, err := os.ReadFile(out.Name()); err == nil {
				t.Logf("%s's output (last 4 KiB):\n%s", name, log[max(0, len(log)-4096):])
			}
		}
	})
}

// burrowStatus is Burrow's status of group, from its lag endpoint (OK,
// WARN, ERR, STOP, STALL or REWIND, NOTFOUND while Burrow knows no such
// group, or "" when it does not answer), and the group's total lag.
func burrowStatus(t *testing.T, api, group string) (string, int64) {
	resp, err := http.Get("http://" + api + "/v3/kafka/local/consumer/" + group + "/lag")
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	var body struct {
		Status struct {
			Status   string `json:"status"`
			TotalLag int64  `json:"totallag"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", 0
	}
	return body.Status.Status, body.Status.TotalLag
}
