package partition

import "sort"

// deliveredWindows bounds how far back DeliveredEnd looks, in index
// windows of about indexIntervalBytes: past that, markers and aborted
// records are too many to read on every pass.
const deliveredWindows = 1024

// DeliveredEnd is the offset just past the last record below `to` that a
// read_committed consumer is given: neither a marker nor an aborted
// transaction's record. It is 0 if there is no such record from the log
// start. A consumer commits past the last record it was given, never past
// the markers and aborted records after it, so this is the furthest a
// group that read everything below `to` can have committed
// (docs/design/transactions.md). It is false while a transaction with
// records below `to` is open, whose records may yet be given. It is `to`
// itself when the records given end further back than deliveredWindows,
// so that a caller does not read that far on every pass.
func (l *Log) DeliveredEnd(to int64) (int64, bool) {
	bound := to
	for range deliveredWindows {
		w, ok := l.windowBefore(to, bound)
		if !ok {
			return 0, w.done
		}
		var given []header
		var at []int64
		err := scanHeaders(w.view.f, w.view.from, w.view.size, func(h header, pos int64) bool {
			if h.BaseOffset >= bound {
				return false
			}
			aborted := h.isTransactional() && abortedBatch(w.aborted, h)
			if !h.isControl() && !aborted {
				given, at = append(given, h), append(at, pos)
			}
			return true
		})
		if err != nil {
			return 0, false
		}
		for i := len(given) - 1; i >= 0; i-- {
			end, err := lastRecordEnd(w.view.f, given[i], at[i], bound)
			if err != nil {
				return 0, false
			}
			if end > 0 {
				return end, true
			}
		}
		bound = w.first
	}
	return to, true
}

// window is a stretch of a segment that DeliveredEnd reads: from an index
// entry (its offset first) to the segment's end, and the aborted
// transactions with records there.
type window struct {
	view    segmentView
	first   int64
	aborted []AbortedTxn
	done    bool // no window: the log start is reached
}

// windowBefore is the window of the index entry at or before bound-1,
// false with done once bound is at the log start, and false without it
// while a transaction with records below to is open.
func (l *Log) windowBefore(to, bound int64) (window, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.txn.stable(l.next) < to {
		return window{}, false
	}
	if bound <= l.start {
		return window{done: true}, false
	}
	// The last segment with a batch below bound; compaction may leave
	// gaps between segments, so it is looked for from the end.
	i := len(l.segs) - 1
	for i >= 0 && (len(l.segs[i].index) == 0 || l.segs[i].base+int64(l.segs[i].index[0].relOffset) >= bound) {
		i--
	}
	if i < 0 {
		return window{done: true}, false
	}
	seg := l.segs[i]
	j := sort.Search(len(seg.index), func(j int) bool { return seg.base+int64(seg.index[j].relOffset) >= bound }) - 1
	first := seg.base + int64(seg.index[j].relOffset)
	return window{view: seg.view(j), first: first, aborted: l.txn.abortedIn(first, bound)}, true
}

// lastRecordEnd is the offset past the batch's last record below bound;
// 0 for a batch compaction emptied there.
func lastRecordEnd(f segmentFile, h header, pos, bound int64) (int64, error) {
	raw := make([]byte, h.Length)
	if _, err := f.ReadAt(raw, pos); err != nil {
		return 0, readErr(err)
	}
	end := int64(0)
	_, err := EachKey(raw, func(offset int64, _ []byte) {
		if offset < bound {
			end = offset + 1
		}
	})
	return end, err
}
