package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/raftka/raftka/broker/meta"
)

// The metadata group has at most three voters; every other broker follows
// it as a non-voting observer, so it reads metadata locally and can propose.
// A voter adds the observer when asked over HTTP, before the observer starts
// its replica.

type observerRequest struct {
	ID       int32  `json:"id"`
	RaftAddr string `json:"raftAddress"`
}

// requestObserverSeat asks the join addresses, in turn, to add this broker
// to the metadata group, until one succeeds or ctx ends.
func (b *Broker) requestObserverSeat(ctx context.Context) error {
	body, _ := json.Marshal(observerRequest{ID: b.cfg.ID, RaftAddr: b.cfg.RaftAddr})
	client := &http.Client{Timeout: 10 * time.Second}
	for attempt := 0; ; attempt++ {
		for _, addr := range b.cfg.JoinAddresses {
			resp, err := client.Post("http://"+addr+"/internal/metadata-observers", "application/json", bytes.NewReader(body))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					b.log.Info("joined metadata group as observer", "via", addr)
					return nil
				}
				err = fmt.Errorf("status %s", resp.Status)
			}
			if attempt%10 == 0 {
				b.log.Warn("metadata join attempt failed", "via", addr, "error", err)
			}
		}
		if !sleep(ctx, time.Second) {
			return errors.New("stopped before joining the metadata group")
		}
	}
}

func (b *Broker) handleAddObserver(w http.ResponseWriter, r *http.Request) {
	var req observerRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ID < 0 || req.RaftAddr == "" {
		http.Error(w, "want {id, raftAddress}", http.StatusBadRequest)
		return
	}
	if _, voter := b.cfg.MetadataVoters[req.ID]; voter {
		http.Error(w, "a metadata voter cannot join as an observer", http.StatusConflict)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	m, err := b.nh.SyncGetClusterMembership(ctx, meta.MetadataShard)
	if err != nil {
		http.Error(w, "metadata group unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if addr, ok := m.Observers[nodeID(req.ID)]; ok {
		if addr == req.RaftAddr {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "broker id already observes from "+addr, http.StatusConflict)
		return
	}
	if err := b.nh.SyncRequestAddObserver(ctx, meta.MetadataShard, nodeID(req.ID), req.RaftAddr, m.ConfigChangeID); err != nil {
		http.Error(w, "add observer: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	b.log.Info("metadata observer added", "id", req.ID, "raft", req.RaftAddr)
	w.WriteHeader(http.StatusOK)
}
