package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"k8s.io/apimachinery/pkg/types"
)

func TestRetryableBrokerError(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection closed under the request", fmt.Errorf("describe: %w", io.EOF), true},
		{"dial refused by a restarting broker", refused, true},
		{"timeout", context.DeadlineExceeded, true},
		{"retriable Kafka error", kerr.NotLeaderForPartition, true},
		{"refusal", kerr.PolicyViolation, false},
		{"invalid request", kerr.InvalidReplicationFactor, false},
		{"plain error", errors.New("boom"), false},
		{"every shard retryable", &kadm.ShardErrors{Errs: []kadm.ShardError{{Err: io.EOF}, {Err: refused}}}, true},
		{"one shard refused", &kadm.ShardErrors{Errs: []kadm.ShardError{{Err: io.EOF}, {Err: kerr.PolicyViolation}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryableBrokerError(tt.err); got != tt.want {
				t.Fatalf("retryableBrokerError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestTransientFailuresAreToleratedOnlyForAWhile(t *testing.T) {
	var f transientFailures
	key := types.NamespacedName{Namespace: "ns", Name: "orders"}
	for i := 0; i < transientRetries; i++ {
		if !f.tolerate(key, io.EOF) {
			t.Fatalf("retry %d of a dead connection not tolerated", i+1)
		}
	}
	if f.tolerate(key, io.EOF) {
		t.Fatalf("tolerated more than %d consecutive failures", transientRetries)
	}
	// Reported once, the count starts again; a success also resets it.
	if !f.tolerate(key, io.EOF) {
		t.Fatal("the count did not restart after the failure was reported")
	}
	f.forget(key)
	for i := 0; i < transientRetries; i++ {
		if !f.tolerate(key, io.EOF) {
			t.Fatalf("retry %d after a success not tolerated", i+1)
		}
	}
	if f.tolerate(types.NamespacedName{Name: "other"}, kerr.PolicyViolation) {
		t.Fatal("a refusal was tolerated")
	}
}
