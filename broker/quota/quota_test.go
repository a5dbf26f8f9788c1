package quota

import (
	"testing"
	"time"
)

func TestResolveFollowsKafkasPrecedence(t *testing.T) {
	n := func(s string) *Name { return &Name{Name: s} }
	d := &Name{Default: true}
	all := []Config{
		{Entity{ClientID: d}, map[string]float64{ProducerByteRate: 8}},
		{Entity{ClientID: n("app")}, map[string]float64{ProducerByteRate: 7}},
		{Entity{User: d}, map[string]float64{ProducerByteRate: 6}},
		{Entity{User: d, ClientID: d}, map[string]float64{ProducerByteRate: 5}},
		{Entity{User: d, ClientID: n("app")}, map[string]float64{ProducerByteRate: 4}},
		{Entity{User: n("alice")}, map[string]float64{ProducerByteRate: 3, ConsumerByteRate: 30}},
		{Entity{User: n("alice"), ClientID: d}, map[string]float64{ProducerByteRate: 2}},
		{Entity{User: n("alice"), ClientID: n("app")}, map[string]float64{ProducerByteRate: 1}},
	}
	for _, tc := range []struct {
		name           string
		configs        []Config
		key, user, cid string
		limit          float64
		bucket         string
		none           bool
	}{
		{"user and client id", all, ProducerByteRate, "alice", "app", 1, `user="alice",client-id="app"`, false},
		{"user, default client id", all[:7], ProducerByteRate, "alice", "app", 2, `user="alice",client-id="app"`, false},
		{"user", all[:6], ProducerByteRate, "alice", "app", 3, `user="alice"`, false},
		{"default user, client id", all[:5], ProducerByteRate, "alice", "app", 4, `user="alice",client-id="app"`, false},
		{"default user, default client id", all[:4], ProducerByteRate, "alice", "app", 5, `user="alice",client-id="app"`, false},
		{"default user", all[:3], ProducerByteRate, "alice", "app", 6, `user="alice"`, false},
		{"client id", all[:2], ProducerByteRate, "alice", "app", 7, `client-id="app"`, false},
		{"default client id", all[:1], ProducerByteRate, "alice", "app", 8, `client-id="app"`, false},
		{"another user takes the defaults", all, ProducerByteRate, "bob", "app", 4, `user="bob",client-id="app"`, false},
		{"per key: the user's consumer rate", all, ConsumerByteRate, "alice", "app", 30, `user="alice"`, false},
		{"no config sets the key", all, ConsumerByteRate, "bob", "app", 0, "", true},
		{"none at all", nil, ProducerByteRate, "alice", "app", 0, "", true},
	} {
		limit, bucket, ok := Resolve(tc.configs, tc.key, tc.user, tc.cid)
		if ok == tc.none || limit != tc.limit || bucket.String() != tc.bucket {
			t.Errorf("%s: %v %s %v, want %v %s", tc.name, limit, bucket, ok, tc.limit, tc.bucket)
		}
	}
}

func TestWindowAndThrottle(t *testing.T) {
	w := DefaultWindowing.NewWindow()
	start := time.Unix(1000, 0)
	// A first burst counts over the whole window, not its instant.
	w.Record(start, 1000)
	if rate, window := w.Rate(start); rate != 100 || window != 10*time.Second {
		t.Fatalf("first burst: %v/s over %v", rate, window)
	}
	// 2,000 bytes/s for 20 s: the old samples leave the window.
	for i := 1; i <= 20; i++ {
		w.Record(start.Add(time.Duration(i)*time.Second), 2000)
	}
	now := start.Add(20*time.Second + 500*time.Millisecond)
	rate, window := w.Rate(now)
	if window != 10500*time.Millisecond || rate < 2090 || rate > 2100 {
		t.Fatalf("steady: %v/s over %v", rate, window)
	}
	// Twice the limit: pause for the window's length to halve the rate.
	if d := DefaultWindowing.Throttle(2000, 1000, 10*time.Second); d != 10*time.Second {
		t.Errorf("throttle at twice the limit: %v", d)
	}
	if d := DefaultWindowing.Throttle(900, 1000, 10*time.Second); d != 0 {
		t.Errorf("throttle within the limit: %v", d)
	}
	if d := DefaultWindowing.Throttle(1e9, 1, 10*time.Second); d != 11*time.Second {
		t.Errorf("throttle far over the limit: %v, want the cap", d)
	}
	if !w.Idle(now.Add(12*time.Second)) || w.Idle(now) {
		t.Error("idle")
	}
}
