package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// throttleCounter is a franz-go hook counting the throttles brokers
// imposed.
type throttleCounter struct{ n atomic.Int64 }

func (h *throttleCounter) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// TestClientQuotas: quotas set with AlterClientQuotas (kadm, as
// kafka-configs.sh) are described back with Kafka's filters, keys that
// would go unenforced are refused, and a producer_byte_rate slows the
// client it names to about its rate while another client of the same
// broker runs free, measured as ratios, not against a clock; a request
// already sent waits out the throttle time of the one before it.
func TestClientQuotas(t *testing.T) {
	// Samples of 100 ms: a window of 1.1 s rather than Kafka's 11 s, so
	// that a few seconds show the rate past the first burst.
	c := brokertest.Start(t, brokertest.Options{Brokers: 1, ExtraFlags: []string{"--quota-window-size", "100ms"}})
	c.CreateTopic("metered", 1, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := c.Admin()
	str := func(s string) *string { return &s }
	const limit = 256 << 10
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: str("slow")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: limit}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: str("alice")}, {Type: "client-id"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 1 << 20}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 50}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: str("10.0.0.1")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, a := range altered {
		switch {
		case a.Err == nil:
		case errors.Is(a.Err, kerr.InvalidRequest):
			refused = append(refused, a.Entity.String())
		default:
			t.Fatalf("altering %s: %v", a.Entity, a.Err)
		}
	}
	if got := strings.Join(refused, " "); got != "{user=<default>} {ip=10.0.0.1}" {
		t.Errorf("refused %s, want the unenforced keys", got)
	}
	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) string {
		described, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range described {
			out = append(out, fmt.Sprintf("%s%s", d.Entity, d.Values))
		}
		return strings.Join(out, " ")
	}
	if got := describe(false, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 2}); got != "{client-id=slow}[producer_byte_rate=262144.000000] {user=alice, client-id=<default>}[consumer_byte_rate=1048576.000000]" {
		t.Errorf("any client id: %s", got)
	}
	if got := describe(true, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 2}); got != "{client-id=slow}[producer_byte_rate=262144.000000]" {
		t.Errorf("any client id, strict: %s", got)
	}
	if got := describe(false, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: str("alice")}, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 1}); got != "{user=alice, client-id=<default>}[consumer_byte_rate=1048576.000000]" {
		t.Errorf("alice with the default client id: %s", got)
	}

	// Each client produces 16 KiB records for 6 s; the rate counts the
	// last 3 s, past the first burst the window lets through.
	value := make([]byte, 16<<10)
	measure := func(clientID string) (rate float64, throttles int64) {
		hook := &throttleCounter{}
		cl := c.Client(kgo.ClientID(clientID), kgo.DefaultProduceTopic("metered"), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerBatchMaxBytes(64<<10), kgo.MaxBufferedRecords(16), kgo.WithHooks(hook))
		start := time.Now()
		var counted int
		for time.Since(start) < 6*time.Second {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if time.Since(start) >= 3*time.Second {
				counted += len(value)
			}
		}
		return float64(counted) / (time.Since(start) - 3*time.Second).Seconds(), hook.n.Load()
	}
	slow, slowThrottles := measure("slow")
	fast, fastThrottles := measure("fast")
	t.Logf("slow %.0f B/s (%d throttles), fast %.0f B/s (%d throttles), quota %d B/s", slow, slowThrottles, fast, fastThrottles, limit)
	if slowThrottles == 0 || fastThrottles != 0 {
		t.Errorf("throttled responses: slow %d, fast %d", slowThrottles, fastThrottles)
	}
	if slow > 2*limit || slow < limit/4 {
		t.Errorf("the slow client ran at %.2fx its quota", slow/limit)
	}
	if fast < 3*slow {
		t.Errorf("the client without a quota ran at %.2fx the slow one", fast/slow)
	}
	if n, _ := c.Metric(0, "raftka_client_quota_throttles_total", `quota="producer_byte_rate"`); n < 1 {
		t.Error("no throttle counted on /metrics")
	}

	// A produce written right behind one that goes over the quota, in
	// the same write, is handled only once that one's throttle time is
	// over: the connection is muted, whatever the socket holds.
	conn, err := net.Dial("tcp", c.Brokers[0].KafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow"))
	var frames []byte
	for i := range 2 {
		frames = append(frames, f.AppendRequest(nil, produceV9("metered", batch(-1, 0, 0, strings.Repeat("m", 2*limit))), int32(i))...)
	}
	sent := time.Now()
	if _, err := conn.Write(frames); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	first, second := kmsg.NewPtrProduceResponse(), kmsg.NewPtrProduceResponse()
	first.Version, second.Version = 9, 9
	readResponse(t, conn, 0, first)
	readResponse(t, conn, 1, second)
	throttle := time.Duration(first.ThrottleMillis) * time.Millisecond
	if waited := time.Since(sent); throttle == 0 || waited < throttle {
		t.Errorf("the produce behind one throttled %v was answered after %v", throttle, waited)
	}

	// A consumer quota: a client over it is answered with no records and
	// fetches the same offsets again after its pause, so it reads every
	// record, in order, at about its rate.
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: str("slow-reader")}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: limit}}}}); err != nil {
		t.Fatal(err)
	}
	hook := &throttleCounter{}
	reader := c.Client(kgo.ClientID("slow-reader"), kgo.ConsumeTopics("metered"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10), kgo.WithHooks(hook))
	start := time.Now()
	var counted int
	next := int64(0)
	for time.Since(start) < 6*time.Second {
		fctx, fcancel := context.WithTimeout(ctx, time.Second)
		fetches := reader.PollFetches(fctx)
		fcancel()
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("the throttled reader got offset %d, want %d", r.Offset, next)
			}
			next++
			if time.Since(start) >= 3*time.Second {
				counted += len(r.Value)
			}
		})
	}
	read := float64(counted) / (time.Since(start) - 3*time.Second).Seconds()
	t.Logf("slow reader %.0f B/s (%d throttles), quota %d B/s", read, hook.n.Load(), limit)
	if hook.n.Load() == 0 || read > 2*limit || read < limit/4 {
		t.Errorf("the slow reader ran at %.2fx its quota with %d throttles", read/limit, hook.n.Load())
	}
}
