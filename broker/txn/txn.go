package txn

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// Metadata is what the loops read of the metadata.
type Metadata interface {
	Read(func(*meta.State))
	Changed() <-chan struct{}
}

// Partitions answers for, and proposes to, the partition replicas this
// broker hosts.
type Partitions interface {
	IsLeader(shard uint64) bool
	// Term is the Raft term this broker leads shard in.
	Term(shard uint64) int32
	// Propose proposes a command to shard's group and waits for its
	// result.
	Propose(ctx context.Context, shard uint64, cmd []byte) (partition.Result, error)
}

// Deps are the loops' dependencies.
type Deps struct {
	ID         int32
	Meta       Metadata
	Partitions Partitions
	Propose    func(context.Context, *meta.Command) (meta.Outcome, error)
	MetaLeader func() (int32, bool)
	Log        *slog.Logger
	// Now is the clock, time.Now unless a test sets it.
	Now func() time.Time
}

// Interval is how often the loops look when nothing wakes them: a
// transaction times out with no metadata change to announce it.
const Interval = 250 * time.Millisecond

// proposeTimeout bounds one proposal; a pass that fails is tried again.
const proposeTimeout = 10 * time.Second

// Run writes markers and aborts timed-out transactions until ctx ends.
func Run(ctx context.Context, d Deps) {
	if d.Now == nil {
		d.Now = time.Now
	}
	wait.OnChange(ctx, d.Meta.Changed, 0, Interval, func() {
		writeMarkers(ctx, d)
		if id, ok := d.MetaLeader(); ok && id == d.ID {
			abortTimedOut(ctx, d)
		}
	})
}

// pendingMarker is a marker this broker is to write: the partition it
// leads and the transaction it ends there.
type pendingMarker struct {
	txn   meta.EndingTxn
	topic string
	index int32
	shard uint64
}

// markersToWrite are the markers of ending transactions on the
// partitions this broker leads that no leader reported yet. On the
// metadata leader, gone are those of partitions deleted meanwhile: there
// is nothing to mark, and the transaction must not wait for them.
func markersToWrite(d Deps) (todo []pendingMarker, gone []meta.WrittenMarker) {
	id, ok := d.MetaLeader()
	leading := ok && id == d.ID
	d.Meta.Read(func(s *meta.State) {
		for _, e := range s.EndingTransactions() {
			for topic, parts := range e.Partitions {
				for _, p := range parts {
					if slices.Contains(e.Written[topic], p) {
						continue
					}
					_, part := s.Partition(topic, p)
					switch {
					case part == nil && leading:
						gone = append(gone, meta.WrittenMarker{ID: e.ID, Seq: e.Seq, Topic: topic, Partition: p})
					case part != nil && d.Partitions.IsLeader(part.Shard):
						todo = append(todo, pendingMarker{txn: e, topic: topic, index: p, shard: part.Shard})
					}
				}
			}
		}
	})
	return todo, gone
}

// writeMarkers writes the pending markers through their partitions' Raft
// groups, all at once, then reports the ones written in one metadata
// command. Written one after another, a pass took a partition commit per
// marker, and every transaction that ended meanwhile waited for the next
// pass: the producers' next transactions waited on it (docs/benchmarks.md,
// "Transactions"). A marker written twice (a report lost, a leader
// changed) is recognised by the partition and answered as the first.
func writeMarkers(ctx context.Context, d Deps) {
	todo, written := markersToWrite(d)
	var (
		mu      sync.Mutex
		writers sync.WaitGroup
		slots   = make(chan struct{}, maxMarkerWrites)
	)
	for _, m := range todo {
		slots <- struct{}{}
		writers.Go(func() {
			defer func() { <-slots }()
			if writeMarker(ctx, d, m) {
				mu.Lock()
				written = append(written, meta.WrittenMarker{ID: m.txn.ID, Seq: m.txn.Seq, Topic: m.topic, Partition: m.index})
				mu.Unlock()
			}
		})
	}
	writers.Wait()
	if len(written) == 0 {
		return
	}
	if _, err := propose(ctx, d, &meta.Command{MarkersWritten: &meta.MarkersWritten{Markers: written}}); err != nil {
		d.Log.Debug("transaction markers not reported, tried again", "markers", len(written), "err", err)
	}
}

// maxMarkerWrites bounds the proposals of one pass in flight: after a
// coordinator's failover, thousands of markers may be pending.
const maxMarkerWrites = 256

// writeMarker writes one marker through its partition's group; false if
// it was not, to be tried again on a later pass.
func writeMarker(ctx context.Context, d Deps, m pendingMarker) bool {
	batch := partition.MarkerBatch(m.txn.ProducerID, m.txn.Epoch, m.txn.Seq, m.txn.Commit, 0, d.Now().UnixMilli())
	ctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	res, err := d.Partitions.Propose(ctx, m.shard, partition.WriteMarkerCommand(d.Partitions.Term(m.shard), batch))
	if err == nil {
		err = res.Err
	}
	if err != nil {
		d.Log.Debug("transaction marker not written, tried again", "transactional_id", m.txn.ID, "topic", m.topic, "partition", m.index, "err", err)
		return false
	}
	return true
}

// abortTimedOut proposes the abort of every transaction open for its
// timeout; the metadata decides again from the time in the command.
func abortTimedOut(ctx context.Context, d Deps) {
	var due []meta.EndTxn
	d.Meta.Read(func(s *meta.State) { due = s.TimedOutTransactions(d.Now().UnixMilli()) })
	for _, c := range due {
		if _, err := propose(ctx, d, &meta.Command{EndTxn: &c}); err == nil {
			d.Log.Info("transaction aborted after its timeout", "transactional_id", c.ID, "producer_id", c.ProducerID)
		}
	}
}

func propose(ctx context.Context, d Deps, cmd *meta.Command) (meta.Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	out, err := d.Propose(ctx, cmd)
	if err == nil {
		err = out.Err
	}
	return out, err
}
