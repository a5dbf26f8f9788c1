// Package txn runs the transaction coordinator's loops
// (docs/design/transactions.md). On every broker, the leader of each
// partition of an ending transaction writes the transaction's marker
// there and reports it to the metadata, which completes the transaction
// once every partition has its marker. On the metadata leader, a
// transaction open past its timeout is aborted. The rules and the state
// are the metadata's (meta/txn.go) and the partition's
// (partition/txn.go); this package reads the clock and proposes.
package txn
