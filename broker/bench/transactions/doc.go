// Package transactions benchmarks what transactions cost on real brokers
// (docs/design/transactions.md): transactional produce in transactions of
// 1,000 records as a ratio to idempotent produce, read_committed consume
// as a ratio to read_uncommitted over the same records, and the latency
// EndTxn adds at one transaction in flight, each side by side in one run.
// make bench writes its section of docs/benchmarks.md.
package transactions
