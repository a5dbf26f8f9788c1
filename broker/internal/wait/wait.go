// Package wait holds the ways the broker's loops pause: for a while, or
// until the metadata changes, or until their context ends.
package wait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends; it reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// OnChange runs pass now and again after each change that changed
// announces, at most once per calm (changes come in bursts: offset
// commits change the metadata many times a second), and at least every
// interval, until ctx ends. changed returns a channel that closes at the
// next change, as meta.Replica's Changed does.
func OnChange(ctx context.Context, changed func() <-chan struct{}, calm, interval time.Duration, pass func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		next := changed()
		pass()
		select {
		case <-ctx.Done():
			return
		case <-next:
			if !Sleep(ctx, calm) {
				return
			}
		case <-tick.C:
		}
	}
}
