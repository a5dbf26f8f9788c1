package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/meta"
	"github.com/raftka/raftka/broker/partition"
)

// state serves a bare metadata state as the loops read it.
type state struct{ s *meta.State }

func (m state) Read(fn func(*meta.State)) { fn(m.s) }
func (m state) Changed() <-chan struct{}  { return nil }
func (m state) shard(topic string, p int32) uint64 {
	_, part := m.s.Partition(topic, p)
	return part.Shard
}

// partitions leads some shards and fails the proposals to others.
type partitions struct {
	leads, fails map[uint64]bool
	mu           sync.Mutex
	proposed     []uint64
}

func (p *partitions) IsLeader(shard uint64) bool { return p.leads[shard] }
func (p *partitions) Term(uint64) int32          { return 1 }
func (p *partitions) Propose(_ context.Context, shard uint64, _ []byte) (partition.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proposed = append(p.proposed, shard)
	if p.fails[shard] {
		return partition.Result{}, errors.New("no quorum")
	}
	return partition.Result{}, nil
}

// endingTxn is a metadata state with one committing transaction over
// out[0..2] and gone[0], whose topic was deleted after the commit.
func endingTxn(t *testing.T) state {
	t.Helper()
	s := meta.NewState()
	index := uint64(0)
	apply := func(c *meta.Command) meta.Outcome {
		index++
		out := s.Apply(index, c)
		if out.Err != nil {
			t.Fatalf("command %d: %v", index, out.Err)
		}
		return out
	}
	for id := range int32(3) {
		apply(&meta.Command{RegisterBroker: &meta.Broker{ID: id, Host: "127.0.0.1", Port: 9092 + id, RaftAddr: "r", Features: []string{meta.FeatureTransactions}}})
	}
	apply(&meta.Command{CreateTopic: &meta.CreateTopic{Placement: meta.PlacementEpochs, Name: "out", Partitions: 3, ReplicationFactor: 3}})
	apply(&meta.Command{CreateTopic: &meta.CreateTopic{Placement: meta.PlacementEpochs, Name: "gone", Partitions: 1, ReplicationFactor: 3}})
	init := apply(&meta.Command{InitTxnProducer: &meta.InitTxnProducer{ID: "tx", TimeoutMs: 60_000, ExpectedProducerID: -1, ExpectedEpoch: -1, NowMs: 1}})
	apply(&meta.Command{AddToTxn: &meta.AddToTxn{ID: "tx", ProducerID: init.ProducerID, Epoch: init.Epoch,
		Partitions: map[string][]int32{"out": {0, 1, 2}, "gone": {0}}, NowMs: 2}})
	apply(&meta.Command{EndTxn: &meta.EndTxn{ID: "tx", ProducerID: init.ProducerID, Epoch: init.Epoch, Commit: true, NowMs: 3}})
	apply(&meta.Command{DeleteTopic: "gone"})
	return state{s}
}

// TestWriteMarkersReportsWhatWasWritten: one pass writes the markers of
// the partitions this broker leads, at once, and reports in one command
// those written and, on the metadata leader, those of deleted partitions;
// a marker whose write failed is left to the next pass, and one another
// broker leads is left to it.
func TestWriteMarkersReportsWhatWasWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leading bool
		want    []string
	}{
		{"on the metadata leader", true, []string{"gone/0", "out/0"}},
		{"on another broker", false, []string{"out/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := endingTxn(t)
			p := &partitions{leads: map[uint64]bool{m.shard("out", 0): true, m.shard("out", 1): true},
				fails: map[uint64]bool{m.shard("out", 1): true}}
			var reports []*meta.MarkersWritten
			d := Deps{ID: 0, Meta: m, Partitions: p, Log: slog.New(slog.DiscardHandler), Now: time.Now,
				MetaLeader: func() (int32, bool) {
					if tc.leading {
						return 0, true
					}
					return 1, true
				},
				Propose: func(_ context.Context, c *meta.Command) (meta.Outcome, error) {
					reports = append(reports, c.MarkersWritten)
					return meta.Outcome{}, nil
				}}
			writeMarkers(context.Background(), d)
			slices.Sort(p.proposed)
			if want := []uint64{m.shard("out", 0), m.shard("out", 1)}; !slices.Equal(p.proposed, want) {
				t.Fatalf("markers proposed to shards %v, want %v (the two this broker leads)", p.proposed, want)
			}
			if len(reports) != 1 {
				t.Fatalf("%d reports, want one", len(reports))
			}
			var got []string
			for _, w := range reports[0].Markers {
				if w.ID != "tx" || w.Seq != m.ending().Seq {
					t.Fatalf("reported %+v, not the ending transaction", w)
				}
				got = append(got, fmt.Sprintf("%s/%d", w.Topic, w.Partition))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("reported %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWriteMarkersReportsNothingWhenNothingWasWritten: a pass whose every
// write failed proposes nothing.
func TestWriteMarkersReportsNothingWhenNothingWasWritten(t *testing.T) {
	m := endingTxn(t)
	p := &partitions{leads: map[uint64]bool{m.shard("out", 2): true}, fails: map[uint64]bool{m.shard("out", 2): true}}
	d := Deps{ID: 0, Meta: m, Partitions: p, Log: slog.New(slog.DiscardHandler), Now: time.Now, MetaLeader: func() (int32, bool) { return 1, true },
		Propose: func(context.Context, *meta.Command) (meta.Outcome, error) {
			t.Fatal("proposed a report with nothing written")
			return meta.Outcome{}, nil
		}}
	writeMarkers(context.Background(), d)
	if len(p.proposed) != 1 {
		t.Fatalf("proposed %d markers, want the one led", len(p.proposed))
	}
}

func (m state) ending() meta.EndingTxn { return m.s.EndingTransactions()[0] }
