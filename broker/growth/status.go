package growth

import "time"

// Status is a topic's ordered growth as the brokers' HTTP endpoint
// (GET /growth) reports it, for the operator and the raftka tool.
type Status struct {
	Topic string `json:"topic"`
	// Growths are the growths not lifted yet, oldest first; only the
	// first holds consumers back, the others wait for it.
	Growths []GrowthStatus `json:"growths,omitempty"`
	// LastLift is how the latest lifted growth ended.
	LastLift *Lift `json:"lastLift,omitempty"`
	// ForcedLifts counts the growths lifted at their bound.
	ForcedLifts int `json:"forcedLifts,omitempty"`
}

// GrowthStatus is one growth in progress.
type GrowthStatus struct {
	Seq  int   `json:"seq"`
	From int32 `json:"from"`
	To   int32 `json:"to"`
	// Hidden: not every old partition reported its split yet, so clients
	// still see From partitions.
	Hidden bool `json:"hidden,omitempty"`
	// HeldSince is when the growth became visible and began to hold.
	HeldSince time.Time `json:"heldSince,omitzero"`
	Splits    []int64   `json:"splits"`
	Holds     []int64   `json:"holds"`
	Releases  []int64   `json:"releases"`
	// Draining are the counted groups still short of a release.
	Draining []string `json:"draining,omitempty"`
}

// Lift is a growth's end.
type Lift struct {
	Seq    int       `json:"seq"`
	Reason Reason    `json:"reason"`
	At     time.Time `json:"at"`
	// HeldMs is how long consumers were held.
	HeldMs int64 `json:"heldMs"`
}
