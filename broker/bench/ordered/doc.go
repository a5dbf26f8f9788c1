// Package ordered benchmarks ordered growth (docs/design/ordered-growth.md)
// on real brokers: how long after a growth its new partitions reach a
// lagging group, against the group's backlog; the group's consume rate
// across a growth, as a ratio to the rate without one, with ordered growth
// on and off; and the Fetch path with no growth under way, as a ratio to
// the last build without ordered growth, run beside it. make bench writes
// its section of docs/benchmarks.md.
package ordered
