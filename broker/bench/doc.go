// Package bench measures the broker with real processes on 127.0.0.1 and a
// real franz-go client: throughput and latency with acks=all, failover time
// after a SIGKILLed leader, and memory per broker. Run it with `make bench`;
// it rewrites docs/benchmarks.md. These are measurements, not tests: they
// assert nothing.
package bench
