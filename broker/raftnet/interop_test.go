package raftnet

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/lni/dragonboat/v3"
	"github.com/lni/dragonboat/v3/config"
	sm "github.com/lni/dragonboat/v3/statemachine"
)

// counter counts the entries it applied, keeps a CRC over them in order,
// and remembers whether a snapshot from a peer ever replaced its state.
type counter struct {
	mu        sync.Mutex
	applied   uint64
	sum       uint32
	recovered bool
}

type counted struct {
	applied   uint64
	sum       uint32
	recovered bool
}

func (c *counter) Update(cmd []byte) (sm.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied++
	c.sum = crc32.Update(c.sum, crc32.IEEETable, cmd)
	return sm.Result{Value: c.applied}, nil
}

func (c *counter) Lookup(any) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return counted{c.applied, c.sum, c.recovered}, nil
}

func (c *counter) SaveSnapshot(w io.Writer, _ sm.ISnapshotFileCollection, _ <-chan struct{}) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return binary.Write(w, binary.BigEndian, [2]uint64{c.applied, uint64(c.sum)})
}

func (c *counter) RecoverFromSnapshot(r io.Reader, _ []sm.SnapshotFile, _ <-chan struct{}) error {
	var state [2]uint64
	if err := binary.Read(r, binary.BigEndian, &state); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applied, c.sum, c.recovered = state[0], uint32(state[1]), true
	return nil
}

func (c *counter) Close() error { return nil }

const interopCluster = 1

// interopHost is a NodeHost with one replica of the test's group, on
// Dragonboat's transport when transport is nil.
type interopHost struct {
	id   uint64
	addr string
	nh   *dragonboat.NodeHost
	sm   *counter
}

func startInteropHost(t *testing.T, id uint64, addr string, transport config.TransportFactory, members map[uint64]string, join bool) *interopHost {
	t.Helper()
	expert := config.GetDefaultExpertConfig()
	expert.LogDB = config.GetTinyMemLogDBConfig()
	expert.TransportFactory = transport
	nh, err := dragonboat.NewNodeHost(config.NodeHostConfig{NodeHostDir: t.TempDir(), RTTMillisecond: 5, RaftAddress: addr, Expert: expert})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nh.Stop)
	h := &interopHost{id: id, addr: addr, nh: nh, sm: &counter{}}
	if join {
		members = nil
	}
	err = nh.StartCluster(members, join, func(uint64, uint64) sm.IStateMachine { return h.sm },
		config.Config{NodeID: id, ClusterID: interopCluster, ElectionRTT: 20, HeartbeatRTT: 2, CheckQuorum: true, SnapshotEntries: 10, CompactionOverhead: 2})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// state reads the replica's state machine; a replica not yet recovered
// or started answers with an error.
func (h *interopHost) state() (counted, error) {
	v, err := h.nh.StaleRead(interopCluster, nil)
	if err != nil {
		return counted{}, fmt.Errorf("replica %d: %w", h.id, err)
	}
	return v.(counted), nil
}

// eventually retries f for up to 30 s.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *interopHost) leadTo(t *testing.T, target uint64) {
	t.Helper()
	eventually(t, fmt.Sprintf("leadership to replica %d", target), func() error {
		leader, ok, err := h.nh.GetLeaderID(interopCluster)
		if err == nil && ok && leader == target {
			return nil
		}
		_ = h.nh.RequestLeaderTransfer(interopCluster, target)
		return fmt.Errorf("leader is %d (known %v, %v)", leader, ok, err)
	})
}

func (h *interopHost) propose(t *testing.T, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		eventually(t, "propose", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := h.nh.SyncPropose(ctx, h.nh.GetNoOPSession(interopCluster), fmt.Appendf(nil, "entry %d", i))
			return err
		})
	}
}

// TestSpeaksDragonboatsTransport runs one Raft group across brokers on
// both transports, so a rolling upgrade across the change keeps its
// quorums: messages go both ways, and a snapshot streams from a leader on
// each transport to a new replica on the other.
func TestSpeaksDragonboatsTransport(t *testing.T) {
	addrs := []string{localAddr(t), localAddr(t), localAddr(t), localAddr(t)}
	members := map[uint64]string{1: addrs[0], 2: addrs[1], 3: addrs[2]}
	dragonboats := startInteropHost(t, 1, addrs[0], nil, members, false)
	ours := startInteropHost(t, 2, addrs[1], Factory{}, members, false)
	ours.leadTo(t, 1)
	ours.propose(t, 0, 30)

	// Replica 3, on this transport, starts after its log was compacted:
	// it gets a snapshot from Dragonboat's transport.
	late := startInteropHost(t, 3, addrs[2], Factory{}, members, false)
	hosts := []*interopHost{dragonboats, ours, late}
	converged := func(want uint64) {
		t.Helper()
		eventually(t, "replicas converge", func() error {
			first, err := hosts[0].state()
			if err != nil {
				return err
			}
			for _, h := range hosts {
				s, err := h.state()
				if err != nil {
					return err
				}
				if s.applied != want || s.sum != first.sum {
					return fmt.Errorf("replica %d applied %d entries (sum %08x), replica %d %d (sum %08x); want %d", h.id, s.applied, s.sum, hosts[0].id, first.applied, first.sum, want)
				}
			}
			return nil
		})
	}
	converged(30)
	if s, _ := late.state(); !s.recovered {
		t.Fatal("replica 3 caught up without a snapshot: the test no longer streams one from Dragonboat's transport")
	}

	// Leadership on this transport, then replica 4 on Dragonboat's joins:
	// it gets a snapshot from this transport.
	ours.leadTo(t, 2)
	ours.propose(t, 30, 60)
	eventually(t, "add replica 4", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return ours.nh.SyncRequestAddNode(ctx, interopCluster, 4, addrs[3], 0)
	})
	joined := startInteropHost(t, 4, addrs[3], nil, nil, true)
	hosts = append(hosts, joined)
	ours.propose(t, 60, 70)
	converged(70)
	if s, _ := joined.state(); !s.recovered {
		t.Fatal("replica 4 caught up without a snapshot: the test no longer streams one to Dragonboat's transport")
	}
}
