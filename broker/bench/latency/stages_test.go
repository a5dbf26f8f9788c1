package latency

import (
	"fmt"
	"strings"

	"github.com/raftka/raftka/broker/brokertest"
)

// stageNames are raftka_produce_stage_seconds's stages, in the order a
// produce passes them.
var stageNames = []string{"propose", "log_frames_sync", "log_record_sync", "apply", "commit", "respond"}

// stageTotals are the sums and counts of every stage over all brokers.
type stageTotals map[string][2]float64

func scrapeStages(c *brokertest.Cluster) stageTotals {
	out := stageTotals{}
	for i := range c.Brokers {
		for _, s := range stageNames {
			label := fmt.Sprintf(`stage=%q`, s)
			sum, _ := c.Metric(i, "raftka_produce_stage_seconds_sum", label)
			count, _ := c.Metric(i, "raftka_produce_stage_seconds_count", label)
			t := out[s]
			out[s] = [2]float64{t[0] + sum, t[1] + count}
		}
	}
	return out
}

// meansSince is each stage's mean time since before, in the order of
// stageNames.
func (after stageTotals) meansSince(before stageTotals) string {
	var parts []string
	for _, s := range stageNames {
		sum, count := after[s][0]-before[s][0], after[s][1]-before[s][1]
		if count <= 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", s, 1000*sum/count))
	}
	return strings.Join(parts, ", ")
}
