// Package brokertest starts real raftka-broker processes for tests: a
// cluster of N brokers with fixed ports on 127.0.0.1, or each in a network
// namespace of its own on a bridge the test creates (Options.Namespaces),
// which tests can SIGKILL, pause, stop and restart one broker at a time,
// or cut off from the other brokers (Isolate). It also keeps a ledger of
// what a producer was acknowledged, to check against what is stored, and
// a checker of each key's order in what a consumer group processed
// (KeyOrder).
package brokertest
