package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestOpenFileLimitIsABoundNotACrash: a broker's open-file limit bounds
// how many partition replicas it takes, where it used to panic inside
// Dragonboat once a frame file would not open. Placement refuses a topic
// past a broker's room with POLICY_VIOLATION that names the broker and the
// limit; a broker restarted with fewer files than its replicas need starts
// what fits, reports the rest, keeps serving, and starts them all once
// its limit is back. Nothing acknowledged is lost.
func TestOpenFileLimitIsABoundNotACrash(t *testing.T) {
	// Room for (600 - 256 reserved) / 3 files per replica = 114 replicas.
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, OpenFileLimits: []int{0, 0, 600}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c.CreateTopic("fits", 100, 3, nil)
	created, err := c.Admin().CreateTopic(ctx, 30, 3, nil, "past-the-limit")
	if err == nil {
		err = created.Err
	}
	if !errors.Is(err, kerr.PolicyViolation) || !strings.Contains(created.ErrMessage, "broker 2 holds 100 of its 114") || !strings.Contains(created.ErrMessage, "ulimit -n") {
		t.Fatalf("a topic past broker 2's room: %v %q, want POLICY_VIOLATION naming broker 2's limit", err, created.ErrMessage)
	}
	if topics, err := c.Admin().ListTopics(ctx); err != nil || topics.Has("past-the-limit") {
		t.Fatalf("the refused topic exists: %v", err)
	}
	acks := brokertest.NewLedger()
	produceAcked(ctx, t, c, acks, "fits", "before", 500)

	// Back with files for about 20 replicas: not ready, saying why.
	// Starting all 100 would run out of files and crash the broker.
	restartWithOpenFiles(t, c, 2, 200)
	waitFor(t, time.Minute, "broker 2 to report replicas waiting for open files", func() bool {
		v, _ := c.Metric(2, "raftka_replicas_waiting_for_open_files")
		code, body := c.Get(2, "/readyz")
		return v > 0 && code != 200 && strings.Contains(body, "wait for open files")
	})
	if hosted, _ := c.Metric(2, "raftka_hosted_replicas"); hosted == 0 || hosted >= 100 {
		t.Fatalf("broker 2 hosts %v replicas with 200 open files, want some but not all 100", hosted)
	}
	produceAcked(ctx, t, c, acks, "fits", "short", 500)
	if c.WaitExit(2, 3*time.Second) {
		t.Fatal("broker 2 exited with too few open files for its replicas")
	}

	restartWithOpenFiles(t, c, 2, 0)
	waitFor(t, time.Minute, "broker 2 to start every replica", func() bool {
		waiting, _ := c.Metric(2, "raftka_replicas_waiting_for_open_files")
		hosted, _ := c.Metric(2, "raftka_hosted_replicas")
		return waiting == 0 && hosted == 100
	})
	waitFullyReplicated(t, c, "fits", 2)
	acks.VerifyExactlyOnce(t, "fits", c.Client)
}

// restartWithOpenFiles stops broker i and starts it again under an
// open-file limit (0: the test's own, and waits until it is ready).
func restartWithOpenFiles(t *testing.T, c *brokertest.Cluster, i, limit int) {
	t.Helper()
	c.Stop(i)
	if !c.WaitExit(i, 30*time.Second) {
		t.Fatalf("broker %d did not stop", i)
	}
	c.Brokers[i].OpenFileLimit = limit
	c.Restart(i)
	if limit == 0 {
		c.WaitReady(i)
	}
}

// TestConnectionLimitQueuesConnections: past --max-connections the broker
// accepts no connection until one closes (Kafka's max.connections), so
// that clients cannot take the open files its partitions need; the
// connection waiting in the backlog is served once one closes.
func TestConnectionLimitQueuesConnections(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 1, ExtraFlags: []string{"--max-connections", "3"}})
	answers := func(conn net.Conn, within time.Duration) bool {
		// ApiVersions v0: size, key 18, version 0, correlation id 7, client id "t".
		req := []byte{0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 7, 0, 1, 't'}
		_ = conn.SetDeadline(time.Now().Add(within))
		if _, err := conn.Write(req); err != nil {
			return false
		}
		var head [8]byte
		_, err := io.ReadFull(conn, head[:])
		return err == nil && binary.BigEndian.Uint32(head[4:]) == 7
	}
	var conns []net.Conn
	for i := 0; i < 4; i++ {
		conn, err := net.Dial("tcp", c.Brokers[0].KafkaAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	for i, conn := range conns[:3] {
		if !answers(conn, 10*time.Second) {
			t.Fatalf("connection %d of 3 not answered", i)
		}
	}
	if answers(conns[3], 2*time.Second) {
		t.Fatal("a fourth connection was served past --max-connections 3")
	}
	conns[0].Close()
	if !answers(conns[3], 10*time.Second) {
		t.Fatal("the fourth connection was not served once one closed")
	}
}
