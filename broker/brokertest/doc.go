// Package brokertest starts real raftka-broker processes on 127.0.0.1 for
// tests: a cluster of N brokers with fixed ports, which tests can SIGKILL,
// stop and restart one broker at a time.
package brokertest
