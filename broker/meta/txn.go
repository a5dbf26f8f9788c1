package meta

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The transaction coordinator's state: each transactional id's producer,
// epoch and current transaction, kept beside the committed offsets so that
// one command decides a commit and makes its offsets committed
// (docs/design/transactions.md).

// TxnState is where a transactional id's current transaction stands, in
// Kafka's names (DescribeTransactions and ListTransactions show them).
type TxnState string

const (
	TxnEmpty          TxnState = "Empty"
	TxnOngoing        TxnState = "Ongoing"
	TxnPrepareCommit  TxnState = "PrepareCommit"
	TxnPrepareAbort   TxnState = "PrepareAbort"
	TxnCompleteCommit TxnState = "CompleteCommit"
	TxnCompleteAbort  TxnState = "CompleteAbort"
)

// maxEpoch is the last epoch a producer id takes: a bump past it starts a
// new producer id at epoch 0, as Kafka does.
const maxEpoch = 1<<15 - 2

// Transaction is one transactional id's coordinator state.
type Transaction struct {
	ProducerID int64
	Epoch      int16
	// LastProducerID and LastEpoch are the producer before the latest
	// bump, so that a retry of the request that bumped it (its answer
	// lost) is recognised and answered alike (KIP-360, KIP-890).
	LastProducerID int64 `json:",omitempty"`
	LastEpoch      int16 `json:",omitempty"`
	TimeoutMs      int32
	State          TxnState
	// Seq numbers the id's transactions. A transactional batch is taken
	// by a partition only for the transaction in progress, and a marker
	// ends the one it names, so a late write of an ended transaction
	// cannot open another on the partition.
	Seq int64
	// Partitions and Groups are the current transaction's partitions
	// (topic -> sorted partitions) and the groups whose offsets it
	// commits; Offsets are those offsets, pending until it commits.
	Partitions map[string][]int32                          `json:",omitempty"`
	Groups     []string                                    `json:",omitempty"`
	Offsets    map[string]map[string]map[int32]GroupOffset `json:",omitempty"`
	// Written are the partitions whose leaders wrote the ending
	// transaction's marker (topic -> sorted partitions).
	Written map[string][]int32 `json:",omitempty"`
	// StartedMs is when the current transaction began, UpdatedMs when
	// the state last changed (the proposer's clock, Unix milliseconds).
	StartedMs int64 `json:",omitempty"`
	UpdatedMs int64 `json:",omitempty"`
}

// Open reports whether the transaction takes writes.
func (t *Transaction) Open() bool { return t.State == TxnOngoing }

// Ending reports whether its markers are being written.
func (t *Transaction) Ending() bool { return t.State == TxnPrepareCommit || t.State == TxnPrepareAbort }

// InitTxnProducer is InitProducerId with a transactional id. Expected
// names the producer the client holds (KIP-360: ProducerID -1 for none).
type InitTxnProducer struct {
	ID                 string
	TimeoutMs          int32
	ExpectedProducerID int64
	ExpectedEpoch      int16
	NowMs              int64
}

// AddToTxn adds partitions (AddPartitionsToTxn) or a group
// (AddOffsetsToTxn) to the producer's transaction, which it begins if
// none is open.
type AddToTxn struct {
	ID         string
	ProducerID int64
	Epoch      int16
	Partitions map[string][]int32 `json:",omitempty"`
	Group      string             `json:",omitempty"`
	NowMs      int64
}

// TxnCommitOffsets stores a group's offsets with the transaction
// (TxnOffsetCommit); they become committed if it commits. AddGroup adds
// the group first, as AddToTxn does (TxnOffsetCommit v5, KIP-890 part 2,
// has no AddOffsetsToTxn before it); NowMs is then the time it may begin
// the transaction at.
type TxnCommitOffsets struct {
	ID         string
	ProducerID int64
	Epoch      int16
	Group      string
	Offsets    map[string]map[int32]GroupOffset
	AddGroup   bool  `json:",omitempty"`
	NowMs      int64 `json:",omitempty"`
}

// EndTxn ends the open transaction (EndTxn), or, with Timeout, aborts it
// if it has been open for its timeout at NowMs (the metadata leader's
// clock). Bump gives the producer a new epoch, as EndTxn v5 (KIP-890
// part 2) and a timeout do.
type EndTxn struct {
	ID         string
	ProducerID int64
	Epoch      int16
	Commit     bool
	Bump       bool `json:",omitempty"`
	Timeout    bool `json:",omitempty"`
	NowMs      int64
}

// MarkersWritten records markers that partition leaders wrote; a
// transaction whose partitions all have theirs is complete.
type MarkersWritten struct {
	Markers []WrittenMarker
}

// WrittenMarker is the marker of transaction Seq of id on one partition.
type WrittenMarker struct {
	ID        string
	Seq       int64
	Topic     string
	Partition int32
}

// TxnOutcome is what a transaction command answers: the producer id and
// epoch the client holds from now on.
type TxnOutcome struct {
	ProducerID int64
	Epoch      int16
}

func (s *State) txn(id string) *Transaction {
	if s.transactions == nil {
		s.transactions, s.txnByProducer, s.txnActive = map[string]*Transaction{}, map[int64]string{}, map[string]struct{}{}
	}
	return s.transactions[id]
}

// reindexTxns rebuilds the derived indexes, after a snapshot is read.
func (s *State) reindexTxns() {
	if s.transactions == nil {
		s.txnByProducer, s.txnActive = nil, nil // made with the first transactional id (txn)
		return
	}
	s.txnByProducer = make(map[int64]string, len(s.transactions))
	s.txnActive = map[string]struct{}{}
	for id, t := range s.transactions {
		s.txnByProducer[t.ProducerID] = id
		s.indexActive(id)
	}
}

// indexActive keeps id in txnActive while its transaction is open or
// ending.
func (s *State) indexActive(id string) {
	if t := s.transactions[id]; t != nil && (t.Open() || t.Ending()) {
		s.txnActive[id] = struct{}{}
		return
	}
	delete(s.txnActive, id)
}

// activeIDs are the ids of the open and ending transactions, sorted.
func (s *State) activeIDs() []string { return slices.Sorted(maps.Keys(s.txnActive)) }

// applyTxn applies a transaction command; ok is false for another kind.
func (s *State) applyTxn(c *Command) (Outcome, bool) {
	var out TxnOutcome
	var err error
	switch {
	case c.InitTxnProducer != nil:
		out, err = s.initTxnProducer(c.InitTxnProducer)
		s.indexActive(c.InitTxnProducer.ID)
	case c.AddToTxn != nil:
		out, err = s.addToTxn(c.AddToTxn)
		s.indexActive(c.AddToTxn.ID)
	case c.TxnCommitOffsets != nil:
		out, err = s.txnCommitOffsets(c.TxnCommitOffsets)
		s.indexActive(c.TxnCommitOffsets.ID)
	case c.EndTxn != nil:
		out, err = s.endTxn(c.EndTxn)
		s.indexActive(c.EndTxn.ID)
	case c.MarkersWritten != nil:
		out, err = s.markersWritten(c.MarkersWritten)
		for _, m := range c.MarkersWritten.Markers {
			s.indexActive(m.ID)
		}
	default:
		return Outcome{}, false
	}
	if err != nil {
		return Outcome{Err: err}, true
	}
	return Outcome{ProducerID: out.ProducerID, Epoch: out.Epoch}, true
}

// bump gives t's producer the next epoch, or a new producer id past the
// last epoch.
func (s *State) bump(id string, t *Transaction) {
	t.LastProducerID, t.LastEpoch = t.ProducerID, t.Epoch
	if t.Epoch >= maxEpoch {
		delete(s.txnByProducer, t.ProducerID)
		t.ProducerID, t.Epoch = s.nextProducerID, 0
		s.nextProducerID++
		s.txnByProducer[t.ProducerID] = id
		return
	}
	t.Epoch++
}

func (s *State) initTxnProducer(c *InitTxnProducer) (TxnOutcome, error) {
	t := s.txn(c.ID)
	if t == nil {
		t = &Transaction{ProducerID: s.nextProducerID, LastProducerID: -1, LastEpoch: -1, TimeoutMs: c.TimeoutMs, State: TxnEmpty, UpdatedMs: c.NowMs}
		s.nextProducerID++
		s.transactions[c.ID] = t
		s.txnByProducer[t.ProducerID] = c.ID
		return TxnOutcome{t.ProducerID, t.Epoch}, nil
	}
	if c.ExpectedProducerID >= 0 {
		switch {
		case c.ExpectedProducerID == t.LastProducerID && c.ExpectedEpoch == t.LastEpoch && !t.Ending():
			// A retry of the bump that gave the current epoch.
			return TxnOutcome{t.ProducerID, t.Epoch}, nil
		case c.ExpectedProducerID != t.ProducerID || c.ExpectedEpoch != t.Epoch:
			return TxnOutcome{}, kerr.ProducerFenced
		}
	}
	switch {
	case t.Ending():
		return TxnOutcome{}, kerr.ConcurrentTransactions
	case t.Open():
		// The previous producer left a transaction open: it is fenced
		// and aborted first, and the caller asks again once it is done.
		s.bump(c.ID, t)
		t.State, t.UpdatedMs = TxnPrepareAbort, c.NowMs
		completeEmpty(t)
		return TxnOutcome{}, kerr.ConcurrentTransactions
	}
	s.bump(c.ID, t)
	t.State, t.TimeoutMs, t.UpdatedMs = TxnEmpty, c.TimeoutMs, c.NowMs
	return TxnOutcome{t.ProducerID, t.Epoch}, nil
}

// current checks that a request comes from t's current producer.
func current(t *Transaction, producerID int64, epoch int16) error {
	switch {
	case t == nil || t.ProducerID != producerID:
		return kerr.InvalidProducerIDMapping
	case epoch != t.Epoch:
		return kerr.ProducerFenced
	}
	return nil
}

func (s *State) addToTxn(c *AddToTxn) (TxnOutcome, error) {
	t := s.txn(c.ID)
	if err := current(t, c.ProducerID, c.Epoch); err != nil {
		return TxnOutcome{}, err
	}
	if t.Ending() {
		return TxnOutcome{}, kerr.ConcurrentTransactions
	}
	if !t.Open() {
		t.State, t.Seq, t.StartedMs = TxnOngoing, t.Seq+1, c.NowMs
		t.Partitions, t.Groups, t.Offsets = nil, nil, nil
	}
	t.UpdatedMs = c.NowMs
	for topic, parts := range c.Partitions {
		if t.Partitions == nil {
			t.Partitions = map[string][]int32{}
		}
		merged := append(slices.Clone(t.Partitions[topic]), parts...)
		slices.Sort(merged)
		t.Partitions[topic] = slices.Compact(merged)
	}
	if c.Group != "" && !slices.Contains(t.Groups, c.Group) {
		t.Groups = append(t.Groups, c.Group)
		slices.Sort(t.Groups)
	}
	return TxnOutcome{t.ProducerID, t.Epoch}, nil
}

func (s *State) txnCommitOffsets(c *TxnCommitOffsets) (TxnOutcome, error) {
	if c.AddGroup {
		if _, err := s.addToTxn(&AddToTxn{ID: c.ID, ProducerID: c.ProducerID, Epoch: c.Epoch, Group: c.Group, NowMs: c.NowMs}); err != nil {
			return TxnOutcome{}, err
		}
	}
	t := s.txn(c.ID)
	if err := current(t, c.ProducerID, c.Epoch); err != nil {
		return TxnOutcome{}, err
	}
	if !t.Open() || !slices.Contains(t.Groups, c.Group) {
		return TxnOutcome{}, kerr.InvalidTxnState
	}
	if t.Offsets == nil {
		t.Offsets = map[string]map[string]map[int32]GroupOffset{}
	}
	g := t.Offsets[c.Group]
	if g == nil {
		g = map[string]map[int32]GroupOffset{}
		t.Offsets[c.Group] = g
	}
	for topic, parts := range c.Offsets {
		if g[topic] == nil {
			g[topic] = map[int32]GroupOffset{}
		}
		maps.Copy(g[topic], parts)
	}
	return TxnOutcome{t.ProducerID, t.Epoch}, nil
}

func (s *State) endTxn(c *EndTxn) (TxnOutcome, error) {
	t := s.txn(c.ID)
	if c.Timeout {
		if t == nil || current(t, c.ProducerID, c.Epoch) != nil || !t.Open() || t.StartedMs+int64(t.TimeoutMs) > c.NowMs {
			return TxnOutcome{}, kerr.InvalidTxnState // ended or renewed meanwhile
		}
		s.bump(c.ID, t) // fences the producer that let it time out
		t.State, t.UpdatedMs = TxnPrepareAbort, c.NowMs
		completeEmpty(t)
		return TxnOutcome{t.ProducerID, t.Epoch}, nil
	}
	committing := TxnPrepareAbort
	if c.Commit {
		committing = TxnPrepareCommit
	}
	retry := t != nil && c.Bump && c.ProducerID == t.LastProducerID && c.Epoch == t.LastEpoch
	if !retry {
		if err := current(t, c.ProducerID, c.Epoch); err != nil {
			return TxnOutcome{}, err
		}
	}
	// Kafka's answers: a retry of the same end waits (CONCURRENT_TRANSACTIONS)
	// while the markers are written and succeeds once they are; the other
	// end is refused.
	switch {
	case t.Open() && !retry:
	case !sameEnd(t.State, c.Commit) && (retry || t.Ending()):
		return TxnOutcome{}, kerr.InvalidTxnState
	case t.Ending():
		return TxnOutcome{}, kerr.ConcurrentTransactions
	case sameEnd(t.State, c.Commit) && (retry || !c.Bump):
		return TxnOutcome{t.ProducerID, t.Epoch}, nil
	case c.Bump && !c.Commit:
		// KIP-890 part 2 lets a client abort with nothing open, to get a
		// new epoch after an error.
		s.bump(c.ID, t)
		t.State, t.UpdatedMs = TxnCompleteAbort, c.NowMs
		return TxnOutcome{t.ProducerID, t.Epoch}, nil
	default:
		return TxnOutcome{}, kerr.InvalidTxnState
	}
	if c.Bump {
		s.bump(c.ID, t)
	}
	t.State, t.UpdatedMs = committing, c.NowMs
	if c.Commit {
		for _, group := range slices.Sorted(maps.Keys(t.Offsets)) {
			s.commitOffsets(&CommitOffsets{Group: group, Offsets: t.Offsets[group]}, c.NowMs)
		}
	}
	t.Offsets = nil
	completeEmpty(t)
	return TxnOutcome{t.ProducerID, t.Epoch}, nil
}

// sameEnd reports whether a transaction in state st is ending, or ended,
// the way commit asks.
func sameEnd(st TxnState, commit bool) bool {
	if commit {
		return st == TxnPrepareCommit || st == TxnCompleteCommit
	}
	return st == TxnPrepareAbort || st == TxnCompleteAbort
}

func (s *State) markersWritten(c *MarkersWritten) (TxnOutcome, error) {
	for _, m := range c.Markers {
		t := s.txn(m.ID)
		if t == nil || !t.Ending() || t.Seq != m.Seq || !slices.Contains(t.Partitions[m.Topic], m.Partition) ||
			slices.Contains(t.Written[m.Topic], m.Partition) {
			continue // completed already, or reported twice
		}
		if t.Written == nil {
			t.Written = map[string][]int32{}
		}
		t.Written[m.Topic] = append(t.Written[m.Topic], m.Partition)
		slices.Sort(t.Written[m.Topic])
		if !maps.EqualFunc(t.Written, t.Partitions, slices.Equal) {
			continue
		}
		if t.State == TxnPrepareCommit {
			t.State = TxnCompleteCommit
		} else {
			t.State = TxnCompleteAbort
		}
		t.Partitions, t.Groups, t.Written = nil, nil, nil
	}
	return TxnOutcome{}, nil
}

// completeEmpty completes a transaction ended with no partition: it has no
// marker to wait for.
func completeEmpty(t *Transaction) {
	if len(t.Partitions) > 0 {
		return
	}
	switch t.State {
	case TxnPrepareCommit:
		t.State = TxnCompleteCommit
	case TxnPrepareAbort:
		t.State = TxnCompleteAbort
	}
	t.Groups = nil
}

// Transaction is a transactional id's coordinator state; the partitions
// and groups it returns are the state's, not to be changed.
func (s *State) Transaction(id string) (Transaction, bool) {
	t := s.transactions[id]
	if t == nil {
		return Transaction{}, false
	}
	return *t, true
}

// TransactionIDs are the transactional ids the coordinator knows, sorted.
func (s *State) TransactionIDs() []string { return slices.Sorted(maps.Keys(s.transactions)) }

// EndingTxn is a transaction whose markers are to be written: each of its
// partitions gets a marker of Commit for ProducerID at Epoch, naming Seq;
// Written already have theirs.
type EndingTxn struct {
	ID         string
	ProducerID int64
	Epoch      int16
	Seq        int64
	Commit     bool
	Partitions map[string][]int32
	Written    map[string][]int32
}

// EndingTransactions are the transactions being ended, by id.
func (s *State) EndingTransactions() []EndingTxn {
	var out []EndingTxn
	for _, id := range s.activeIDs() {
		t := s.transactions[id]
		if t.Ending() {
			out = append(out, EndingTxn{ID: id, ProducerID: t.ProducerID, Epoch: t.Epoch, Seq: t.Seq, Commit: t.State == TxnPrepareCommit,
				Partitions: t.Partitions, Written: t.Written})
		}
	}
	return out
}

// TimedOutTransactions are the aborts to propose at nowMs: one per
// transaction open for its timeout.
func (s *State) TimedOutTransactions(nowMs int64) []EndTxn {
	var out []EndTxn
	for _, id := range s.activeIDs() {
		t := s.transactions[id]
		if t.Open() && t.StartedMs+int64(t.TimeoutMs) <= nowMs {
			out = append(out, EndTxn{ID: id, ProducerID: t.ProducerID, Epoch: t.Epoch, Timeout: true, NowMs: nowMs})
		}
	}
	return out
}

// PendingTxnOffset reports whether an open transaction holds an offset of
// group's for the partition, not yet committed: OffsetFetch's
// require_stable answers UNSTABLE_OFFSET_COMMIT then (KIP-447).
func (s *State) PendingTxnOffset(group, topic string, partition int32) bool {
	for id := range s.txnActive {
		if _, ok := s.transactions[id].Offsets[group][topic][partition]; ok {
			return true
		}
	}
	return false
}

// TxnHolds answers whether the partition is in the open transaction of
// id's producer at epoch, with the error Kafka's coordinator gives when it
// is not (AddPartitionsToTxn's verify-only form).
func (s *State) TxnHolds(id string, producerID int64, epoch int16, topic string, partition int32) error {
	t := s.transactions[id]
	if err := current(t, producerID, epoch); err != nil {
		return err
	}
	if t.Ending() {
		return kerr.ConcurrentTransactions
	}
	if _, in := slices.BinarySearch(t.Partitions[topic], partition); !in || !t.Open() {
		return kerr.InvalidTxnState
	}
	return nil
}

// ErrEpochAhead is TxnWrite's answer to an epoch newer than the replica
// knows: the coordinator gave it, and the replica lags.
var ErrEpochAhead = fmt.Errorf("%w: newer than this replica applied", kerr.InvalidProducerEpoch)

// TxnWrite is what a partition leader learns of a transactional batch
// from the coordinator's state: the sequence number of the transaction it
// belongs to, or why it is refused.
func (s *State) TxnWrite(producerID int64, epoch int16, topic string, partition int32) (seq int64, err error) {
	id, ok := s.txnByProducer[producerID]
	if !ok {
		return 0, kerr.InvalidProducerIDMapping
	}
	t := s.transactions[id]
	switch {
	case epoch > t.Epoch:
		return 0, ErrEpochAhead
	case epoch < t.Epoch:
		return 0, kerr.InvalidProducerEpoch // fenced
	case !t.Open():
		return 0, kerr.InvalidTxnState
	}
	if _, in := slices.BinarySearch(t.Partitions[topic], partition); !in {
		return 0, kerr.InvalidTxnState
	}
	return t.Seq, nil
}

// TxnID is the transactional id a transaction command is for, "" for
// another command (or MarkersWritten, which names several).
func (c *Command) TxnID() string {
	switch {
	case c.InitTxnProducer != nil:
		return c.InitTxnProducer.ID
	case c.AddToTxn != nil:
		return c.AddToTxn.ID
	case c.TxnCommitOffsets != nil:
		return c.TxnCommitOffsets.ID
	case c.EndTxn != nil:
		return c.EndTxn.ID
	}
	return ""
}
