// Package moves benchmarks what changes a cluster's shape under load: a
// rolling restart with and without controlled shutdown, and the move of a
// large partition's replica, with the produce rate of the other
// partitions during the move as a ratio to the rate without it. make
// bench writes its section of docs/benchmarks.md.
package moves
