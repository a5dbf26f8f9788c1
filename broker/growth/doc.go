// Package growth owns the rules of ordered growth (docs/design/ordered-growth.md):
// where a grown topic's partitions hold their consumers back, which
// records were placed by a producer that did not know of the growth yet,
// and when a growth's hold lifts. Its functions are pure, so that the
// metadata leader, which reads the clock, and every broker that serves a
// fetch decide alike; the state they read is the metadata's.
package growth
