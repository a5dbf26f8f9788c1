// Package lag measures how many records a consumer group still has to
// read, as the operator's ConsumerGroup status, its metrics and `raftka
// group describe` show it. End minus committed counts offsets, and a
// transactional topic spends offsets on what no consumer is given: its
// commit and abort markers, and, for a read_committed consumer, the
// records of aborted transactions. A fully consumed transactional
// partition would show a lag of one for ever (KEDA's Kafka scaler does);
// here it shows none.
package lag
