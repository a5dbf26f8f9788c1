package integration

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestControlledShutdownHandsOffLeadership: a rolling restart by SIGTERM
// under an acks=all load: each broker hands the leadership of the groups
// it leads (the metadata group's too) to another voter before it stops,
// and nothing acknowledged is lost or duplicated. The stall it saves is
// measured in make bench.
func TestControlledShutdownHandsOffLeadership(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("rolled", 3, 3, nil)
	acks := brokertest.NewLedger()
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := acks.ProduceUntil(producer, "rolled", 3, stop)
		done <- err
	}()
	for i := range c.Brokers {
		// A settled cluster: a broker stopped in its first second can
		// lead a group whose followers have not answered it yet, which
		// no transfer reaches within the shutdown timeout.
		time.Sleep(2 * time.Second)
		// The broker leads its preferred partition again (the leaders hand
		// it back once it caught up) before it is stopped.
		deadline := time.Now().Add(30 * time.Second)
		for n, _ := c.Metric(i, "raftka_leader_partitions"); n < 1; n, _ = c.Metric(i, "raftka_leader_partitions") {
			if time.Now().After(deadline) {
				t.Fatalf("broker %d leads no partition", i)
			}
			time.Sleep(200 * time.Millisecond)
		}
		c.Stop(i)
		log, _ := os.ReadFile(c.Brokers[i].LogPath)
		last := string(log)[strings.LastIndex(string(log), "shutting down"):]
		if !strings.Contains(last, "leadership handed off before stopping") || strings.Contains(last, "groups=0") {
			t.Errorf("broker %d stopped without handing off the leaderships it had:\n%s", i, last)
		}
		c.Restart(i)
		c.WaitReady(i)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	producer.Close()
	acks.VerifyExactlyOnce(t, "rolled", c.Client)
}
