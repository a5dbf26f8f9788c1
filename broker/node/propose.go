package node

import (
	"context"
	"errors"
	"time"

	"github.com/lni/dragonboat/v3"

	"github.com/raftka/raftka/broker/internal/wait"
	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
	"github.com/raftka/raftka/broker/replica"
)

// proposeMeta proposes a metadata command and waits for its outcome,
// retrying while the group is busy or electing a leader.
func (b *Broker) proposeMeta(ctx context.Context, cmd *meta.Command) (meta.Outcome, error) {
	ctx, stop := b.untilDeposed(ctx, meta.MetadataShard)
	defer stop()
	data := cmd.Encode()
	for {
		res, err := b.nh.SyncPropose(ctx, b.nh.GetNoOPSession(meta.MetadataShard), data)
		if err == nil {
			return meta.DecodeOutcome(res.Data)
		}
		if errors.Is(context.Cause(ctx), replica.ErrDeposed) {
			return meta.Outcome{}, replica.ErrDeposed
		}
		if !retriable(err) || ctx.Err() != nil {
			return meta.Outcome{}, err
		}
		if !wait.Sleep(ctx, 50*time.Millisecond) {
			return meta.Outcome{}, ctx.Err()
		}
	}
}

// untilDeposed returns ctx, ended with replica.ErrDeposed stepDownGrace after this
// broker stops leading shard, if it leads it now (see deposed): a leader
// cut off from its followers would otherwise hold its callers until their
// timeout.
func (b *Broker) untilDeposed(ctx context.Context, shard uint64) (context.Context, func()) {
	lost := b.replicas.Deposed(shard)
	ctx, cancel := context.WithCancelCause(ctx)
	if lost == nil {
		return ctx, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-lost:
		case <-done:
			return
		}
		grace := time.NewTimer(b.stepDownGrace())
		defer grace.Stop()
		select {
		case <-grace.C:
			cancel(replica.ErrDeposed)
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

func retriable(err error) bool {
	return errors.Is(err, dragonboat.ErrSystemBusy) || errors.Is(err, dragonboat.ErrClusterNotReady) ||
		errors.Is(err, dragonboat.ErrTimeout) || errors.Is(err, dragonboat.ErrCanceled) || errors.Is(err, dragonboat.ErrAborted) ||
		errors.Is(err, dragonboat.ErrRejected)
}

// partitionProposer proposes to the partition groups this broker leads,
// for loops that write to partitions (package txn).
type partitionProposer struct{ b *Broker }

func (p partitionProposer) IsLeader(shard uint64) bool { return p.b.replicas.IsLeader(shard) }
func (p partitionProposer) Term(shard uint64) int32    { return p.b.replicas.Term(shard) }

// Propose proposes cmd to shard's group, retrying while it is busy, and
// gives up when this broker stops leading it.
func (p partitionProposer) Propose(ctx context.Context, shard uint64, cmd []byte) (partition.Result, error) {
	ctx, stop := p.b.untilDeposed(ctx, shard)
	defer stop()
	for {
		res, err := p.b.nh.SyncPropose(ctx, p.b.nh.GetNoOPSession(shard), cmd)
		if err == nil {
			return partition.DecodeResult(res), nil
		}
		if !retriable(err) || ctx.Err() != nil {
			return partition.Result{}, err
		}
		if !wait.Sleep(ctx, 50*time.Millisecond) {
			return partition.Result{}, ctx.Err()
		}
	}
}
