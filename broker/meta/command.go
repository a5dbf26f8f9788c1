package meta

import (
	"encoding/json"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Command is one metadata change; exactly one field is set.
type Command struct {
	RegisterBroker   *Broker           `json:",omitempty"`
	JoinBroker       *Broker           `json:",omitempty"`
	CreateTopic      *CreateTopic      `json:",omitempty"`
	DeleteTopic      string            `json:",omitempty"`
	CreatePartitions *CreatePartitions `json:",omitempty"`
	RecordSplit      *RecordSplit      `json:",omitempty"`
	AdvanceHold      *AdvanceHold      `json:",omitempty"`
	// RecordDelivered: FeatureGrowthDelivered.
	RecordDelivered     *RecordDelivered `json:",omitempty"`
	LiftGrowth          *LiftGrowth      `json:",omitempty"`
	NoteGroups          *NoteGroups      `json:",omitempty"`
	AlterConfigs        *AlterConfigs    `json:",omitempty"`
	Leader              *LeaderChange    `json:",omitempty"`
	AllocateProducerIDs bool             `json:",omitempty"`
	CommitOffsets       *CommitOffsets   `json:",omitempty"`
	DeleteGroup         string           `json:",omitempty"`
	// RecordGroupMetadata: offsetstopic.go.
	RecordGroupMetadata  *RecordGroupMetadata  `json:",omitempty"`
	DeleteOffsets        *DeleteOffsets        `json:",omitempty"`
	Reassign             *Reassign             `json:",omitempty"`
	CompleteReassignment *CompleteReassignment `json:",omitempty"`
	RenewReplicaNode     *RenewReplicaNode     `json:",omitempty"`
	UnregisterBroker     *UnregisterBroker     `json:",omitempty"`
	RecoverPartition     *RecoverPartition     `json:",omitempty"`
	CompleteRecovery     *CompleteRecovery     `json:",omitempty"`
	SetMetadataVoters    *SetMetadataVoters    `json:",omitempty"`
	// AlterScramCredentials: scram.go.
	AlterScramCredentials *AlterScramCredentials `json:",omitempty"`
	// CreateACLs and DeleteACLs: acls.go.
	CreateACLs *CreateACLs `json:",omitempty"`
	DeleteACLs *DeleteACLs `json:",omitempty"`
	// AlterClientQuotas: quotas.go.
	AlterClientQuotas *AlterClientQuotas `json:",omitempty"`
	// The transaction coordinator's commands: txn.go.
	InitTxnProducer  *InitTxnProducer  `json:",omitempty"`
	AddToTxn         *AddToTxn         `json:",omitempty"`
	TxnCommitOffsets *TxnCommitOffsets `json:",omitempty"`
	EndTxn           *EndTxn           `json:",omitempty"`
	MarkersWritten   *MarkersWritten   `json:",omitempty"`
}

// SetMetadataVoters records which brokers vote in the metadata group
// (Kafka's AddRaftVoter and RemoveRaftVoter). The group's Raft membership
// follows it: it is recorded first, so that a broker joining as a new
// incarnation, or a change cut short by a crash, is admitted in the role
// the record gives it.
type SetMetadataVoters struct {
	Voters []int32
}

// UnregisterBroker forgets a broker that left the cluster for good
// (Kafka's UnregisterBroker), once it holds no partition replica.
type UnregisterBroker struct {
	ID int32
}

// DeleteOffsets deletes some of a group's committed offsets: topic ->
// partitions.
type DeleteOffsets struct {
	Group      string
	Partitions map[string][]int32
}

// CreateTopic creates a topic.
type CreateTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string `json:",omitempty"`
	ValidateOnly      bool              `json:",omitempty"`
	// Assignment, if set, places each partition's replicas (the first is
	// the preferred leader) instead of the broker's placement; Partitions
	// and ReplicationFactor then follow from it.
	Assignment [][]int32 `json:",omitempty"`
	// Placement is the placement rules the proposer asked for
	// (PlacementEpochs); 0 in commands from before, which replay as they
	// were applied then.
	Placement int `json:",omitempty"`
}

// The placement rules of CreateTopic and CreatePartitions. Commands stay
// in the metadata group's log across upgrades, and a replica that replays
// one must place the partitions where the version that first applied it
// did, since their Raft groups exist with those nodes.
const (
	// PlacementLegacy: round-robin from a point the topic id picks, the
	// replicas' nodes at epoch 0 (Partition.Nodes nil).
	PlacementLegacy = 0
	// PlacementEpochs: least loaded and rack-aware (placeReplicas), each
	// partition's nodes at a new epoch.
	PlacementEpochs = 1
	// PlacementCapacity: PlacementEpochs on the brokers with room for
	// another replica (Broker.MaxReplicas); refused with POLICY_VIOLATION
	// where too few have room.
	PlacementCapacity = 2
)

// CreatePartitions grows a topic to Count partitions.
type CreatePartitions struct {
	Name         string
	Count        int32
	ValidateOnly bool `json:",omitempty"`
	// Assignment, if set, places the new partitions' replicas.
	Assignment [][]int32 `json:",omitempty"`
	// Placement: as in CreateTopic.
	Placement int `json:",omitempty"`
	// Ordered makes the growth an ordered one (growth.go), as the topic's
	// raftka.growth.ordered said when it was proposed; false in commands
	// from before, which replay as they were applied then. At is the
	// proposer's clock, Unix milliseconds.
	Ordered bool  `json:",omitempty"`
	At      int64 `json:",omitempty"`
}

// AlterConfigs changes a topic's configs: Replace drops every key not set
// (the legacy AlterConfigs), otherwise Set and Delete are applied on top.
type AlterConfigs struct {
	// Broker: Name is a broker id, or empty for every broker, and the
	// configs are broker configs (BrokerConfigNames).
	Broker       bool `json:",omitempty"`
	Name         string
	Set          map[string]string `json:",omitempty"`
	Delete       []string          `json:",omitempty"`
	Replace      bool              `json:",omitempty"`
	ValidateOnly bool              `json:",omitempty"`
}

// LeaderChange records the Raft leader of a partition's shard at a term.
type LeaderChange struct {
	Shard  uint64
	Leader int32
	Epoch  int32
	// Node is the leader's Raft node.
	Node uint64 `json:",omitempty"`
}

// CommitOffsets commits a group's offsets: topic -> partition -> offset.
type CommitOffsets struct {
	Group   string
	Offsets map[string]map[int32]GroupOffset
}

// Encode serializes a command for a Raft proposal.
func (c *Command) Encode() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // only plain data types: cannot fail
	}
	return b
}

// Outcome is what applying a command returned.
type Outcome struct {
	Err        error
	Topic      *Topic
	ProducerID int64
	// Epoch is the producer epoch a transaction command gives.
	Epoch int16
	// Broker is the broker a RegisterBroker or JoinBroker recorded.
	Broker *Broker
}

type wireOutcome struct {
	Code       int16   `json:",omitempty"`
	Topic      *Topic  `json:",omitempty"`
	ProducerID int64   `json:",omitempty"`
	Epoch      int16   `json:",omitempty"`
	Broker     *Broker `json:",omitempty"`
}

func (o Outcome) encode() []byte {
	w := wireOutcome{Topic: o.Topic, ProducerID: o.ProducerID, Epoch: o.Epoch, Broker: o.Broker}
	if ke, ok := o.Err.(*kerr.Error); ok {
		w.Code = ke.Code
	} else if o.Err != nil {
		w.Code = kerr.UnknownServerError.Code
	}
	b, _ := json.Marshal(w)
	return b
}

// DecodeOutcome reads an Outcome from a proposal's result data.
func DecodeOutcome(b []byte) (Outcome, error) {
	var w wireOutcome
	if err := json.Unmarshal(b, &w); err != nil {
		return Outcome{}, err
	}
	return Outcome{Err: kerr.ErrorForCode(w.Code), Topic: w.Topic, ProducerID: w.ProducerID, Epoch: w.Epoch, Broker: w.Broker}, nil
}
