// Package integration tests the broker end to end: real raftka-broker
// processes on 127.0.0.1, real Raft, and real Kafka clients (franz-go, kcat,
// sarama, kafka-go, KafkaJS, kafka-python and the Java client). Each test
// asserts what was stored and read back.
package integration
