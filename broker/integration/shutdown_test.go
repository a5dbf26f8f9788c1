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
		time.Sleep(2 * time.Second)
		before := acks.Acked()
		c.Stop(i)
		log, _ := os.ReadFile(c.Brokers[i].LogPath)
		if !strings.Contains(string(log), "leadership handed off before stopping") || strings.Contains(string(log), "groups=0") {
			t.Errorf("broker %d stopped without handing off the leaderships it had", i)
		}
		c.Restart(i)
		c.WaitReady(i)
		if acks.Acked() <= before {
			t.Errorf("nothing acknowledged while broker %d restarted", i)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	producer.Close()
	acks.VerifyExactlyOnce(t, "rolled", c.Client)
}
