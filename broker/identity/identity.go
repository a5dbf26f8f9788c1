package identity

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/raftka/raftka/broker/internal/durable"
)

// FileName is the identity file in a data directory.
const FileName = "identity.json"

// Identity is what a data directory records about the broker that runs on
// it.
type Identity struct {
	// ClusterID is the cluster the directory belongs to; empty until the
	// broker first reads it from the metadata.
	ClusterID string `json:"clusterID,omitempty"`
	BrokerID  int32  `json:"brokerID"`
	// Incarnation is drawn once, when the directory is first used.
	Incarnation string `json:"incarnation"`
	// Generation is the metadata group's number for this incarnation;
	// meaningful once Registered.
	Generation uint32 `json:"generation"`
	// Registered is set once the metadata group recorded this incarnation
	// and its generation.
	Registered bool `json:"registered"`
	// Original marks its broker's first incarnation, generation 0: a voter
	// that created the metadata group with the others, or a directory
	// written before identities existed. Every other incarnation joined an
	// existing cluster and was given its generation then.
	Original bool `json:"original,omitempty"`
	// MetadataRole is how this incarnation's node was added to the
	// metadata group when it joined, RoleVoter or RoleObserver; empty for
	// a founder or a directory from before, whose role --metadata-voters
	// gives. A node added as a voter starts as one; any other starts as
	// an observer until its own snapshot lists it as a voter.
	MetadataRole string `json:"metadataRole,omitempty"`
}

// The roles of a node in the metadata group.
const (
	RoleVoter    = "voter"
	RoleObserver = "observer"
)

// State is what Load found.
type State int

const (
	// Empty: no identity and no Raft data; the broker is new or lost its disk.
	Empty State = iota
	// Legacy: Raft data written before identities; generation 0.
	Legacy
	// Recorded: an identity file.
	Recorded
)

// Load reads dir's identity. raftDir is where Raft data would be: a
// directory with Raft data but no identity was written before identities
// existed, and is its broker's generation 0.
func Load(dir, raftDir string, broker int32) (Identity, State, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		entries, rerr := os.ReadDir(raftDir)
		if rerr == nil && len(entries) > 0 {
			return Identity{BrokerID: broker, Incarnation: newIncarnation()}, Legacy, nil
		}
		return Identity{BrokerID: broker, Incarnation: newIncarnation()}, Empty, nil
	}
	if err != nil {
		return Identity{}, Empty, err
	}
	var id Identity
	if err := json.Unmarshal(b, &id); err != nil {
		return Identity{}, Empty, fmt.Errorf("%s: %w", FileName, err)
	}
	if id.BrokerID != broker {
		return Identity{}, Empty, fmt.Errorf("data directory %s belongs to broker %d, not %d", dir, id.BrokerID, broker)
	}
	if id.Incarnation == "" {
		return Identity{}, Empty, fmt.Errorf("%s: no incarnation", FileName)
	}
	return id, Recorded, nil
}

// Save writes the identity durably: a new file renamed over the old one,
// then the directory synced.
func Save(dir string, id Identity) error {
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, FileName+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := durable.Fdatasync(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, FileName)); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}

func newIncarnation() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}
