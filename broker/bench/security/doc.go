// Package security benchmarks what encryption and authentication cost a
// producer: the acknowledged produce rate over a SASL_SSL listener
// (TLS with SCRAM-SHA-512) as a ratio to a PLAINTEXT listener of the same
// brokers, measured in turns in one run. make bench writes its section
// of docs/benchmarks.md.
package security
