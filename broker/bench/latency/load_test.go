package latency

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/raftka/raftka/internal/benchreport"
)

// loadResult is what a closed loop measured: acknowledgements per second
// and each acknowledged message's latency, sorted.
type loadResult struct {
	rate      float64
	latencies []time.Duration
	failed    int
}

func (r loadResult) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[min(len(r.latencies)-1, int(float64(len(r.latencies))*p))]
}

// String is the rate and the median and 99th percentile latencies.
func (r loadResult) String() string {
	s := fmt.Sprintf("%s/s, p50 %s, p99 %s", benchreport.Thousands(r.rate), millis(r.percentile(0.5)), millis(r.percentile(0.99)))
	if r.failed > 0 {
		s += fmt.Sprintf(" (%d failed)", r.failed)
	}
	return s
}

// sendFunc sends one message and calls done with its outcome once it is
// acknowledged; it must not block for long.
type sendFunc func(done func(error))

// closedLoop keeps inFlight messages outstanding, each sent as soon as
// an earlier one is acknowledged, for warm then measure; the messages
// sent during measure are the result. A message's latency runs from its
// send to its acknowledgement, none of it spent waiting for a slot.
func closedLoop(inFlight int, warm, measure time.Duration, send sendFunc) loadResult {
	slots := make(chan struct{}, inFlight)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failed    int
		pending   sync.WaitGroup
	)
	begin := time.Now()
	from, until := begin.Add(warm), begin.Add(warm+measure)
	var lastAck time.Time
	for {
		slots <- struct{}{}
		sent := time.Now()
		if !sent.Before(until) {
			<-slots
			break
		}
		counted := !sent.Before(from)
		pending.Add(1)
		send(func(err error) {
			acked := time.Now()
			if counted {
				mu.Lock()
				if err != nil {
					failed++
				} else {
					latencies = append(latencies, acked.Sub(sent))
				}
				if acked.After(lastAck) {
					lastAck = acked
				}
				mu.Unlock()
			}
			<-slots
			pending.Done()
		})
	}
	pending.Wait()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	// The rate counts what was sent in the window and when its last
	// acknowledgement came.
	elapsed := lastAck.Sub(from)
	if elapsed <= 0 {
		elapsed = measure
	}
	return loadResult{rate: float64(len(latencies)) / elapsed.Seconds(), latencies: latencies, failed: failed}
}

func millis(d time.Duration) string {
	ms := float64(d.Microseconds()) / 1000
	if ms < 10 {
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
