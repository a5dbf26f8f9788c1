package latency

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/raftka/raftka/broker/brokertest"
)

// stageNames are raftka_produce_stage_seconds's stages, in the order a
// produce passes them.
var stageNames = []string{"read", "propose", "log_frames_sync", "log_record_sync", "log_fdatasync", "apply", "commit", "commit_spread", "respond"}

// stageHistogram is one stage's histogram summed over all brokers: the
// sum, the count, and the cumulative count at each bucket's upper bound.
type stageHistogram struct {
	sum, count float64
	buckets    map[float64]float64
}

// stageTotals are every stage's histograms over all brokers, and the
// partition leaderships the brokers won: a leader change stalls a
// partition's producers for an election and the client's metadata refresh.
type stageTotals struct {
	stages      map[string]*stageHistogram
	leaderships float64
	// syncs and syncSeconds are the shared Raft logs' fdatasyncs: how
	// many saves shared one tells how busy the disk's flushes were.
	syncs, syncSeconds float64
}

func scrapeStages(c *brokertest.Cluster) stageTotals {
	out := stageTotals{stages: map[string]*stageHistogram{}}
	for _, s := range stageNames {
		out.stages[s] = &stageHistogram{buckets: map[float64]float64{}}
	}
	for i := range c.Brokers {
		won, _ := c.Metric(i, "raftka_partition_leaderships_won_total")
		out.leaderships += won
		syncs, _ := c.Metric(i, "raftka_raft_log_syncs_total")
		syncSeconds, _ := c.Metric(i, "raftka_raft_log_sync_seconds_total")
		out.syncs += syncs
		out.syncSeconds += syncSeconds
		code, body := c.Get(i, "/metrics")
		if code != 200 {
			continue
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			continue
		}
		family := families["raftka_produce_stage_seconds"]
		if family == nil {
			continue
		}
		for _, m := range family.GetMetric() {
			var stage string
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" {
					stage = l.GetValue()
				}
			}
			h, ok := out.stages[stage]
			if !ok {
				continue
			}
			hist := m.GetHistogram()
			h.sum += hist.GetSampleSum()
			h.count += float64(hist.GetSampleCount())
			for _, b := range hist.GetBucket() {
				h.buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
	}
	return out
}

// quantileBound is the upper bound of the bucket that holds the q
// quantile of the observations made between before and after: the
// quantile is at most this (the buckets double, so at least half of it).
func quantileBound(after, before *stageHistogram, q float64) float64 {
	count := after.count - before.count
	bounds := make([]float64, 0, len(after.buckets))
	for b := range after.buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	for _, b := range bounds {
		if after.buckets[b]-before.buckets[b] >= q*count {
			return b
		}
	}
	return 0
}

// since is, since before, each stage's mean, p99 bound and count in the
// order of stageNames, then the shared logs' fdatasyncs and their mean,
// in milliseconds, and the leader changes.
func (after stageTotals) since(before stageTotals) string {
	var parts []string
	for _, s := range stageNames {
		a, b := after.stages[s], before.stages[s]
		sum, count := a.sum-b.sum, a.count-b.count
		if count <= 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f (p99 %.2g, n %.0f)", s, 1000*sum/count, 1000*quantileBound(a, b, 0.99), count))
	}
	if syncs := after.syncs - before.syncs; syncs > 0 {
		parts = append(parts, fmt.Sprintf("log fdatasyncs %.0f (mean %.2f)", syncs, 1000*(after.syncSeconds-before.syncSeconds)/syncs))
	}
	parts = append(parts, fmt.Sprintf("leader changes %.0f", after.leaderships-before.leaderships))
	return strings.Join(parts, ", ")
}
