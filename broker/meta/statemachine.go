package meta

import (
	"encoding/json"
	"io"
	"sync"

	sm "github.com/lni/dragonboat/v3/statemachine"
	"github.com/twmb/franz-go/pkg/kerr"
)

// StateMachine is the Dragonboat state machine of the metadata group. The
// state is small and kept in memory; snapshots carry all of it.
type StateMachine struct {
	mu      sync.RWMutex
	state   *State
	changed chan struct{}
	// applied is the index of the last entry applied since this process
	// started (0 before), the metadata log's high watermark for
	// DescribeQuorum.
	applied uint64
}

// NewStateMachine returns an empty metadata state machine.
func NewStateMachine() *StateMachine {
	return &StateMachine{state: NewState(), changed: make(chan struct{})}
}

// Read calls fn with the current state, which fn must not keep or change.
func (m *StateMachine) Read(fn func(*State)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fn(m.state)
}

// Applied is the index of the last entry applied since the process
// started.
func (m *StateMachine) Applied() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.applied
}

// Changed returns a channel closed at the next applied change.
func (m *StateMachine) Changed() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.changed
}

// Update implements sm.IConcurrentStateMachine.
func (m *StateMachine) Update(entries []sm.Entry) ([]sm.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, e := range entries {
		var c Command
		out := Outcome{Err: kerr.InvalidRequest}
		if err := json.Unmarshal(e.Cmd, &c); err == nil {
			out = m.state.Apply(e.Index, &c)
		}
		entries[i].Result = sm.Result{Value: 1, Data: out.encode()}
		m.applied = e.Index
	}
	close(m.changed)
	m.changed = make(chan struct{})
	return entries, nil
}

// Lookup implements sm.IConcurrentStateMachine; readers use Read.
func (m *StateMachine) Lookup(interface{}) (interface{}, error) { return nil, nil }

// PrepareSnapshot implements sm.IConcurrentStateMachine.
func (m *StateMachine) PrepareSnapshot() (interface{}, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return json.Marshal(m.state)
}

// SaveSnapshot implements sm.IConcurrentStateMachine.
func (m *StateMachine) SaveSnapshot(ctx interface{}, w io.Writer, _ sm.ISnapshotFileCollection, _ <-chan struct{}) error {
	_, err := w.Write(ctx.([]byte))
	return err
}

// RecoverFromSnapshot implements sm.IConcurrentStateMachine.
func (m *StateMachine) RecoverFromSnapshot(r io.Reader, _ []sm.SnapshotFile, _ <-chan struct{}) error {
	st := NewState()
	if err := json.NewDecoder(r).Decode(st); err != nil {
		return err
	}
	st.reindex()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = st
	close(m.changed)
	m.changed = make(chan struct{})
	return nil
}

// Close implements sm.IConcurrentStateMachine.
func (m *StateMachine) Close() error { return nil }
