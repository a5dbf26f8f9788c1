package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestDescribeLogDirs: each broker reports the partition replicas it hosts,
// with their sizes on disk, and its volume's capacity.
func TestDescribeLogDirs(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("sized", 2, 3, nil)
	c.CreateTopic("single", 3, 1, nil)
	produceN(t, c, "sized", 200)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitFor(t, 20*time.Second, "every replica to hold the records", func() bool {
		for i := range c.Brokers {
			for _, p := range []string{`partition="0"`, `partition="1"`} {
				if size, ok := c.Metric(i, "raftka_partition_size_bytes", `topic="sized"`, p); !ok || size == 0 {
					return false
				}
			}
		}
		return true
	})
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	singleHosts := map[int32]int{}
	for i := range c.Brokers {
		dirs := all[int32(i)]
		if len(dirs) != 1 {
			t.Fatalf("broker %d reports %d log dirs, want 1", i, len(dirs))
		}
		for _, d := range dirs {
			if d.Err != nil || d.Dir != c.Brokers[i].DataDir || d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
				t.Fatalf("broker %d log dir: %+v", i, d)
			}
			for _, p := range []int32{0, 1} {
				got, ok := d.Topics["sized"][p]
				want, _ := c.Metric(i, "raftka_partition_size_bytes", `topic="sized"`, `partition="`+itoa(int(p))+`"`)
				if !ok || got.Size != int64(want) || got.OffsetLag != 0 {
					t.Fatalf("broker %d sized/%d: %+v, want size %v", i, p, got, want)
				}
			}
			for p := range d.Topics["single"] {
				singleHosts[p]++
			}
		}
	}
	if len(singleHosts) != 3 || singleHosts[0] != 1 || singleHosts[1] != 1 || singleHosts[2] != 1 {
		t.Fatalf("partitions of an RF-1 topic reported by brokers: %v, want each once", singleHosts)
	}
	one, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"sized": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for id, dirs := range one {
		for _, d := range dirs {
			if len(d.Topics) != 1 || len(d.Topics["sized"]) != 1 {
				t.Fatalf("broker %d, asked for sized/1 only: %v", id, d.Topics)
			}
		}
	}
}
