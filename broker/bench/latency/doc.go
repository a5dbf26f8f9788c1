// Package latency measures how long an acks=all produce waits for its
// acknowledgement at every load, from one record in flight to thousands,
// side by side in one run with the peer users would pick instead (NATS
// JetStream, a replicated file stream that fsyncs before acknowledging)
// and with franz-go's kfake (in memory, one copy: what the Kafka protocol
// and the client cost on this machine). Run it with `make bench`; it
// rewrites its section of docs/benchmarks.md. It asserts nothing.
package latency
