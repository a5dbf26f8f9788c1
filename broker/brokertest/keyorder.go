package brokertest

import (
	"fmt"
	"sync"
)

// KeyOrder checks what a consumer group processed against what a keyed
// producer was acknowledged, key by key: no record is processed after a
// later record of its key (processing one again, after a rebalance, is
// allowed), and every acknowledged record is processed. Each record's
// value is its key's sequence number.
type KeyOrder struct {
	mu sync.Mutex
	// grownFrom is the first partition a growth added.
	grownFrom int32
	acked     map[string]map[int]bool
	processed map[string]map[int]bool
	latest    map[string]int
	grown     int
	reordered int
	firstBad  string
}

// KeyOrderReport is what a KeyOrder saw.
type KeyOrderReport struct {
	Acked, Missing int
	// Grown counts the records processed from partitions a growth added.
	Grown, Reordered int
	// FirstBad describes the first record processed out of its key's order.
	FirstBad string
}

// NewKeyOrder returns an empty checker of a topic whose partitions from
// grownFrom on are the ones growths added.
func NewKeyOrder(grownFrom int32) *KeyOrder {
	return &KeyOrder{grownFrom: grownFrom, acked: map[string]map[int]bool{}, processed: map[string]map[int]bool{}, latest: map[string]int{}}
}

// Ack records that the record seq of key was acknowledged.
func (k *KeyOrder) Ack(key string, seq int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.acked[key] == nil {
		k.acked[key] = map[int]bool{}
	}
	k.acked[key][seq] = true
}

// Process records that the record seq of key, from partition, was
// processed, after those reported before it.
func (k *KeyOrder) Process(key string, seq int, partition int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.processed[key] == nil {
		k.processed[key] = map[int]bool{}
	}
	if latest, ok := k.latest[key]; ok && seq < latest && !k.processed[key][seq] {
		k.reordered++
		if k.firstBad == "" {
			k.firstBad = fmt.Sprintf("key %s: record %d (partition %d) processed after record %d", key, seq, partition, latest)
		}
	}
	if partition >= k.grownFrom {
		k.grown++
	}
	k.processed[key][seq] = true
	k.latest[key] = max(k.latest[key], seq)
}

// Processed reports whether the record seq of key was processed.
func (k *KeyOrder) Processed(key string, seq int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.processed[key][seq]
}

// Missing counts the acknowledged records not processed yet.
func (k *KeyOrder) Missing() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.missingLocked()
}

func (k *KeyOrder) missingLocked() int {
	n := 0
	for key, seqs := range k.acked {
		for seq := range seqs {
			if !k.processed[key][seq] {
				n++
			}
		}
	}
	return n
}

// Report is what the checker saw so far.
func (k *KeyOrder) Report() KeyOrderReport {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := KeyOrderReport{Missing: k.missingLocked(), Grown: k.grown, Reordered: k.reordered, FirstBad: k.firstBad}
	for _, seqs := range k.acked {
		r.Acked += len(seqs)
	}
	return r
}
