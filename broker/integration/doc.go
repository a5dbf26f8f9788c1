// Package integration tests the broker end to end: real raftka-broker
// processes on 127.0.0.1, real Raft, and real Kafka clients (franz-go,
// librdkafka through confluent-kafka and kcat, sarama, kafka-go, KafkaJS
// and kafka-python). Each test
// asserts what was stored and read back.
package integration
