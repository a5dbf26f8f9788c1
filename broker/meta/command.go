package meta

import (
	"encoding/json"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Command is one metadata change; exactly one field is set.
type Command struct {
	RegisterBroker      *Broker           `json:",omitempty"`
	CreateTopic         *CreateTopic      `json:",omitempty"`
	DeleteTopic         string            `json:",omitempty"`
	CreatePartitions    *CreatePartitions `json:",omitempty"`
	AlterConfigs        *AlterConfigs     `json:",omitempty"`
	Leader              *LeaderChange     `json:",omitempty"`
	AllocateProducerIDs bool              `json:",omitempty"`
	CommitOffsets       *CommitOffsets    `json:",omitempty"`
	DeleteGroup         string            `json:",omitempty"`
	DeleteOffsets       *DeleteOffsets    `json:",omitempty"`
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
}

// CreatePartitions grows a topic to Count partitions.
type CreatePartitions struct {
	Name         string
	Count        int32
	ValidateOnly bool `json:",omitempty"`
}

// AlterConfigs changes a topic's configs: Replace drops every key not set
// (the legacy AlterConfigs), otherwise Set and Delete are applied on top.
type AlterConfigs struct {
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
}

type wireOutcome struct {
	Code       int16  `json:",omitempty"`
	Topic      *Topic `json:",omitempty"`
	ProducerID int64  `json:",omitempty"`
}

func (o Outcome) encode() []byte {
	w := wireOutcome{Topic: o.Topic, ProducerID: o.ProducerID}
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
	return Outcome{Err: kerr.ErrorForCode(w.Code), Topic: w.Topic, ProducerID: w.ProducerID}, nil
}
