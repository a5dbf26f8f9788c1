package meta

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// txnStep is one command of a transactional id's life and what it must
// answer: the producer id and epoch, or the error.
type txnStep struct {
	name string
	cmd  Command
	pid  int64
	ep   int16
	err  error
	// state is the transaction's state after the step, if set.
	state TxnState
}

func runTxnSteps(t *testing.T, s *State, steps []txnStep) {
	t.Helper()
	for i, st := range steps {
		out := s.Apply(uint64(i+1), decoded(t, &st.cmd))
		if !errors.Is(out.Err, st.err) {
			t.Fatalf("step %d (%s): error %v, want %v", i, st.name, out.Err, st.err)
		}
		if st.err == nil && (out.ProducerID != st.pid || out.Epoch != st.ep) {
			t.Fatalf("step %d (%s): producer %d epoch %d, want %d epoch %d", i, st.name, out.ProducerID, out.Epoch, st.pid, st.ep)
		}
		if st.state != "" {
			if txn, _ := s.Transaction("tx"); txn.State != st.state {
				t.Fatalf("step %d (%s): state %s, want %s", i, st.name, txn.State, st.state)
			}
		}
	}
}

func initTxn(expectedPID int64, expectedEpoch int16) Command {
	return Command{InitTxnProducer: &InitTxnProducer{ID: "tx", TimeoutMs: 60000, ExpectedProducerID: expectedPID, ExpectedEpoch: expectedEpoch, NowMs: 1}}
}

func addParts(pid int64, ep int16, at int64, topic string, parts ...int32) Command {
	return Command{AddToTxn: &AddToTxn{ID: "tx", ProducerID: pid, Epoch: ep, Partitions: map[string][]int32{topic: parts}, NowMs: at}}
}

func addGroup(pid int64, ep int16, group string) Command {
	return Command{AddToTxn: &AddToTxn{ID: "tx", ProducerID: pid, Epoch: ep, Group: group, NowMs: 2}}
}

func written(seq int64, topic string, parts ...int32) Command {
	var ms []WrittenMarker
	for _, p := range parts {
		ms = append(ms, WrittenMarker{ID: "tx", Seq: seq, Topic: topic, Partition: p})
	}
	return Command{MarkersWritten: &MarkersWritten{Markers: ms}}
}

func endTxn(pid int64, ep int16, commit, bump bool) Command {
	return Command{EndTxn: &EndTxn{ID: "tx", ProducerID: pid, Epoch: ep, Commit: commit, Bump: bump, NowMs: 3}}
}

func TestTransactionCommitsItsOffsetsWithIt(t *testing.T) {
	s := NewState()
	offsets := map[string]map[int32]GroupOffset{"in": {0: {Offset: 42}}}
	runTxnSteps(t, s, []txnStep{
		{name: "first init", cmd: initTxn(-1, -1), pid: 1000, ep: 0, state: TxnEmpty},
		{name: "add partitions", cmd: addParts(1000, 0, 2, "out", 3, 1), pid: 1000, ep: 0, state: TxnOngoing},
		{name: "add more", cmd: addParts(1000, 0, 2, "out", 1, 2), pid: 1000, ep: 0},
		{name: "offsets of a group not added", cmd: Command{TxnCommitOffsets: &TxnCommitOffsets{ID: "tx", ProducerID: 1000, Group: "g", Offsets: offsets}},
			err: kerr.InvalidTxnState},
		{name: "add group", cmd: addGroup(1000, 0, "g"), pid: 1000, ep: 0},
		{name: "offsets", cmd: Command{TxnCommitOffsets: &TxnCommitOffsets{ID: "tx", ProducerID: 1000, Group: "g", Offsets: offsets}}, pid: 1000, ep: 0},
	})
	if _, ok := s.GroupOffset("g", "in", 0); ok {
		t.Fatal("a transaction's offset is committed before the transaction")
	}
	if !s.PendingTxnOffset("g", "in", 0) || s.PendingTxnOffset("g", "in", 1) || s.PendingTxnOffset("other", "in", 0) {
		t.Fatal("pending offsets: want g's in/0 only")
	}
	if seq, err := s.TxnWrite(1000, 0, "out", 2); err != nil || seq != 1 {
		t.Fatalf("write to a partition of the transaction: seq %d, %v", seq, err)
	}
	if _, err := s.TxnWrite(1000, 0, "out", 0); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("write to a partition not added: %v", err)
	}
	runTxnSteps(t, s, []txnStep{
		{name: "commit", cmd: endTxn(1000, 0, true, false), pid: 1000, ep: 0, state: TxnPrepareCommit},
		{name: "commit retried while its markers are written", cmd: endTxn(1000, 0, true, false), err: kerr.ConcurrentTransactions, state: TxnPrepareCommit},
		{name: "abort after commit", cmd: endTxn(1000, 0, false, false), err: kerr.InvalidTxnState},
		{name: "add while markers are written", cmd: addParts(1000, 0, 4, "out", 1), err: kerr.ConcurrentTransactions},
	})
	if o, ok := s.GroupOffset("g", "in", 0); !ok || o.Offset != 42 || o.CommittedAt != 3 {
		t.Fatalf("offset after commit: %+v %v", o, ok)
	}
	if s.PendingTxnOffset("g", "in", 0) {
		t.Fatal("an offset is still pending after its transaction committed")
	}
	ending := s.EndingTransactions()
	if len(ending) != 1 || !ending[0].Commit || ending[0].Seq != 1 || len(ending[0].Partitions["out"]) != 3 {
		t.Fatalf("ending transactions: %+v", ending)
	}
	if _, err := s.TxnWrite(1000, 0, "out", 1); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("write after EndTxn: %v, want INVALID_TXN_STATE", err)
	}
	runTxnSteps(t, s, []txnStep{
		{name: "markers of an older transaction", cmd: written(0, "out", 1, 2, 3), state: TxnPrepareCommit},
		{name: "two markers", cmd: written(1, "out", 1, 2), state: TxnPrepareCommit},
		{name: "a marker reported twice", cmd: written(1, "out", 2), state: TxnPrepareCommit},
		{name: "the last marker", cmd: written(1, "out", 3), state: TxnCompleteCommit},
		{name: "commit retried once complete", cmd: endTxn(1000, 0, true, false), pid: 1000, ep: 0},
		{name: "next transaction", cmd: addParts(1000, 0, 5, "out", 0), pid: 1000, ep: 0, state: TxnOngoing},
	})
	if seq, err := s.TxnWrite(1000, 0, "out", 0); err != nil || seq != 2 {
		t.Fatalf("the next transaction's write: seq %d, %v", seq, err)
	}
}

// A new producer with the same transactional id fences the old one and
// aborts what it left open.
func TestInitFencesAndAbortsTheOpenTransaction(t *testing.T) {
	s := NewState()
	runTxnSteps(t, s, []txnStep{
		{name: "init", cmd: initTxn(-1, -1), pid: 1000, ep: 0},
		{name: "begin", cmd: addParts(1000, 0, 2, "out", 0), pid: 1000, ep: 0},
		{name: "second producer", cmd: initTxn(-1, -1), err: kerr.ConcurrentTransactions, state: TxnPrepareAbort},
		{name: "second producer retries while markers are written", cmd: initTxn(-1, -1), err: kerr.ConcurrentTransactions},
		{name: "old producer writes on", cmd: addParts(1000, 0, 3, "out", 1), err: kerr.ProducerFenced},
		{name: "old producer commits", cmd: endTxn(1000, 0, true, false), err: kerr.ProducerFenced},
	})
	if e := s.EndingTransactions(); len(e) != 1 || e[0].Commit || e[0].Epoch != 1 {
		t.Fatalf("the abort's markers: %+v, want an abort at epoch 1", e)
	}
	if _, err := s.TxnWrite(1000, 0, "out", 0); !errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, ErrEpochAhead) {
		t.Fatalf("a fenced producer's write: %v, want INVALID_PRODUCER_EPOCH, not an epoch ahead", err)
	}
	// An epoch past the replica's: the replica lags, and a partition
	// leader may propose the add at once (Produce v12); answered to a
	// client, it is still INVALID_PRODUCER_EPOCH.
	if _, err := s.TxnWrite(1000, 2, "out", 0); !errors.Is(err, ErrEpochAhead) || !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("a write at an epoch this replica has not applied: %v", err)
	}
	runTxnSteps(t, s, []txnStep{
		{name: "aborted", cmd: written(1, "out", 0), state: TxnCompleteAbort},
		{name: "second producer gets its epoch", cmd: initTxn(-1, -1), pid: 1000, ep: 2, state: TxnEmpty},
	})
}

func TestTimedOutTransactionIsAbortedAndFenced(t *testing.T) {
	s := NewState()
	runTxnSteps(t, s, []txnStep{
		{name: "init", cmd: initTxn(-1, -1), pid: 1000, ep: 0},
		{name: "begin", cmd: addParts(1000, 0, 100, "out", 0), pid: 1000, ep: 0},
	})
	if got := s.TimedOutTransactions(60099); len(got) != 0 {
		t.Fatalf("timed out before its timeout: %+v", got)
	}
	due := s.TimedOutTransactions(60100)
	if len(due) != 1 {
		t.Fatalf("timed out at its timeout: %+v", due)
	}
	early := due[0]
	early.NowMs = 60099
	runTxnSteps(t, s, []txnStep{
		{name: "abort proposed early", cmd: Command{EndTxn: &early}, err: kerr.InvalidTxnState, state: TxnOngoing},
		{name: "abort", cmd: Command{EndTxn: &due[0]}, pid: 1000, ep: 1, state: TxnPrepareAbort},
		{name: "abort proposed twice", cmd: Command{EndTxn: &due[0]}, err: kerr.InvalidTxnState},
		{name: "the producer commits late", cmd: endTxn(1000, 0, true, false), err: kerr.ProducerFenced},
	})
}

// KIP-890 part 2: every EndTxn gives a new epoch; its retry, with the
// epoch it was sent with, gets the same answer.
func TestEndTxnBumpsTheEpoch(t *testing.T) {
	s := NewState()
	runTxnSteps(t, s, []txnStep{
		{name: "init", cmd: initTxn(-1, -1), pid: 1000, ep: 0},
		{name: "begin", cmd: addParts(1000, 0, 2, "out", 0), pid: 1000, ep: 0},
		{name: "commit", cmd: endTxn(1000, 0, true, true), pid: 1000, ep: 1, state: TxnPrepareCommit},
		{name: "commit retried while its markers are written", cmd: endTxn(1000, 0, true, true), err: kerr.ConcurrentTransactions},
		{name: "abort retried", cmd: endTxn(1000, 0, false, true), err: kerr.InvalidTxnState},
		{name: "complete", cmd: written(1, "out", 0), state: TxnCompleteCommit},
		{name: "commit retried once complete", cmd: endTxn(1000, 0, true, true), pid: 1000, ep: 1},
		{name: "old epoch begins", cmd: addParts(1000, 0, 4, "out", 0), err: kerr.ProducerFenced},
		{name: "abort with nothing open", cmd: endTxn(1000, 1, false, true), pid: 1000, ep: 2, state: TxnCompleteAbort},
		{name: "KIP-360 bump from the current epoch", cmd: initTxn(1000, 2), pid: 1000, ep: 3},
		{name: "its retry", cmd: initTxn(1000, 2), pid: 1000, ep: 3},
		{name: "a bump from a stale producer", cmd: initTxn(1000, 1), err: kerr.ProducerFenced},
	})
}

func TestLastEpochMovesToANewProducerID(t *testing.T) {
	s := NewState()
	runTxnSteps(t, s, []txnStep{{name: "init", cmd: initTxn(-1, -1), pid: 1000, ep: 0}})
	s.transactions["tx"].Epoch = maxEpoch
	runTxnSteps(t, s, []txnStep{{name: "bump past the last epoch", cmd: initTxn(-1, -1), pid: 1001, ep: 0}})
	if _, err := s.TxnWrite(1000, maxEpoch, "out", 0); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("the old producer id: %v", err)
	}
	s2 := recovered(t, s)
	runTxnSteps(t, s2, []txnStep{{name: "begin after recovery", cmd: addParts(1001, 0, 2, "out", 0), pid: 1001, ep: 0}})
	if seq, err := s2.TxnWrite(1001, 0, "out", 0); err != nil || seq != 1 {
		t.Fatalf("a recovered replica's check: seq %d, %v", seq, err)
	}
}

// KIP-890 part 2: a TxnOffsetCommit that adds its group begins the
// transaction and holds the offsets; the commit with a bump commits them
// and gives the next epoch, which the next transaction's commit uses.
func TestTxnOffsetCommitAddsItsGroup(t *testing.T) {
	s := NewState()
	offsets := map[string]map[int32]GroupOffset{"in": {0: {Offset: 7}}}
	commitOffsets := func(ep int16) Command {
		return Command{TxnCommitOffsets: &TxnCommitOffsets{ID: "tx", ProducerID: 1000, Epoch: ep, Group: "g", Offsets: offsets, AddGroup: true, NowMs: 5}}
	}
	runTxnSteps(t, s, []txnStep{
		{name: "init", cmd: initTxn(-1, -1), pid: 1000, ep: 0, state: TxnEmpty},
		{name: "offsets that add their group", cmd: commitOffsets(0), pid: 1000, ep: 0, state: TxnOngoing},
	})
	if !s.PendingTxnOffset("g", "in", 0) {
		t.Fatal("the offsets are not held by the transaction they began")
	}
	if txn, _ := s.Transaction("tx"); txn.StartedMs != 5 {
		t.Fatalf("the transaction began at %d, want 5 (the commit's time)", txn.StartedMs)
	}
	runTxnSteps(t, s, []txnStep{
		{name: "commit with a bump", cmd: endTxn(1000, 0, true, true), pid: 1000, ep: 1, state: TxnCompleteCommit},
		{name: "offsets at the old epoch", cmd: commitOffsets(0), err: kerr.ProducerFenced},
		{name: "offsets at the new epoch", cmd: commitOffsets(1), pid: 1000, ep: 1, state: TxnOngoing},
	})
	if o, ok := s.GroupOffset("g", "in", 0); !ok || o.Offset != 7 {
		t.Fatalf("the first transaction's offset: %+v %v", o, ok)
	}
}
