// Package hold runs ordered growth's two loops (docs/design/ordered-growth.md).
// On every broker, the leader of each old partition of a hidden growth
// reports the partition's split offset, which makes the growth visible
// once all are in; then it classifies the records after the split, and
// reports where the records a consumer is given below the release end
// (delivered.go). On the metadata leader, a held growth is lifted when
// growth.Decide says so, from the committed offsets of the counted
// groups. The rules are package growth's; the state is the metadata's;
// this package only reads the clock and proposes.
package hold
