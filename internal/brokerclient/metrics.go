package brokerclient

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ProduceTotals are a broker's produce requests answered so far and the
// time they took, from its raftka_request_duration_seconds histogram.
type ProduceTotals struct {
	Requests uint64
	Seconds  float64
}

// Since is the window between an earlier reading and this one: its
// request count and mean latency (0 for none, or across a restart, whose
// counters began again).
func (t ProduceTotals) Since(earlier ProduceTotals) (int64, time.Duration) {
	if t.Requests <= earlier.Requests || t.Seconds < earlier.Seconds {
		return 0, 0
	}
	n := t.Requests - earlier.Requests
	return int64(n), time.Duration((t.Seconds - earlier.Seconds) / float64(n) * float64(time.Second))
}

// ProduceLatency reads a broker's produce totals from its /metrics.
func ProduceLatency(ctx context.Context, httpAddr string) (ProduceTotals, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return ProduceTotals{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ProduceTotals{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ProduceTotals{}, fmt.Errorf("%s/metrics: %s", httpAddr, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return ProduceTotals{}, fmt.Errorf("%s/metrics: %w", httpAddr, err)
	}
	var out ProduceTotals
	if f := families["raftka_request_duration_seconds"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "api" && l.GetValue() == "Produce" && m.GetHistogram() != nil {
					out.Requests += m.GetHistogram().GetSampleCount()
					out.Seconds += m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return out, nil
}
