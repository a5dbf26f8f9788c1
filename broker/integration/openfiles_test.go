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

// TestConnectionLimitQueuesConnections: past --max-connections a client
// listener accepts no more connections until one closes, while the
// inter-broker listener beside it stays open to the brokers and the
// operator (Kafka's rule); a connection idle for --connections-max-idle
// is closed and gives its slot back, one that keeps asking is not.
func TestConnectionLimitQueuesConnections(t *testing.T) {
	const idle = 5 * time.Second
	c := brokertest.Start(t, brokertest.Options{Brokers: 1, Listeners: []brokertest.Listener{{Name: "CLIENT", Protocol: "PLAINTEXT"}},
		ExtraFlags: []string{"--max-connections", "3", "--connections-max-idle", idle.String()}})
	dial := func(addr string) net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	var conns []net.Conn
	for i := 0; i < 4; i++ {
		conns = append(conns, dial(c.Brokers[0].Listeners["CLIENT"]))
	}
	for i, conn := range conns[:3] {
		if !answersAPIVersions(conn, 10*time.Second) {
			t.Fatalf("connection %d of 3 not answered", i)
		}
	}
	if answersAPIVersions(conns[3], 2*time.Second) {
		t.Fatal("a fourth connection was served past --max-connections 3")
	}
	if !answersAPIVersions(dial(c.Brokers[0].KafkaAddr), 10*time.Second) {
		t.Fatal("the inter-broker listener was refused for the client listener's limit")
	}
	conns[0].Close()
	if !answersAPIVersions(conns[3], 10*time.Second) {
		t.Fatal("the fourth connection was not served once one closed")
	}

	// conns[1] keeps asking; conns[2] says nothing more.
	for start := time.Now(); time.Since(start) < idle+2*time.Second; time.Sleep(time.Second) {
		if !answersAPIVersions(conns[1], 10*time.Second) {
			t.Fatalf("a connection that asks every second was closed after %s", time.Since(start))
		}
	}
	_ = conns[2].SetReadDeadline(time.Now().Add(20 * time.Second))
	var one [1]byte
	var ne net.Error
	if _, err := conns[2].Read(one[:]); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a connection idle past --connections-max-idle %s was not closed: %v", idle, err)
	}
}

// answersAPIVersions sends ApiVersions v0 on conn and says whether it
// was answered within the time given.
func answersAPIVersions(conn net.Conn, within time.Duration) bool {
	// size, key 18, version 0, correlation id 7, client id "t".
	req := []byte{0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 7, 0, 1, 't'}
	_ = conn.SetDeadline(time.Now().Add(within))
	if _, err := conn.Write(req); err != nil {
		return false
	}
	var head [8]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil || binary.BigEndian.Uint32(head[4:]) != 7 {
		return false
	}
	body := make([]byte, binary.BigEndian.Uint32(head[:4])-4)
	_, err := io.ReadFull(conn, body)
	return err == nil
}
