package meta

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/quota"
)

// A snapshot names State's contents as data directories written before
// State's fields became private do, and reads back to the same state.
func TestSnapshotFormatKeepsItsFieldNames(t *testing.T) {
	s := clusterOf(3)
	s.Apply(10, &Command{UnregisterBroker: &UnregisterBroker{ID: 2}})
	s.Apply(11, &Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: "orders", Partitions: 2, ReplicationFactor: 2}})
	s.Apply(12, &Command{SetMetadataVoters: &SetMetadataVoters{Voters: []int32{0, 1}}})
	s.Apply(13, &Command{AlterConfigs: &AlterConfigs{Broker: true, Set: map[string]string{BrokerConfigLeaderThrottledRate: "1000"}}})
	s.Apply(14, &Command{CommitOffsets: &CommitOffsets{Group: "g", Offsets: map[string]map[int32]GroupOffset{"orders": {0: {Offset: 7}}}}})
	s.Apply(15, &Command{AlterScramCredentials: &AlterScramCredentials{Upserts: []ScramUpsert{{User: "u", Mechanism: ScramSHA256,
		Credential: ScramCredential{Salt: []byte("s"), Iterations: 4096}}}}})
	s.Apply(16, &Command{CreateACLs: &CreateACLs{Bindings: []acl.Binding{{Principal: "User:u", Host: "*", Operation: 2, Permission: 3, ResourceType: 2, ResourceName: "orders", PatternType: 3}}}})
	s.Apply(17, &Command{AlterClientQuotas: &AlterClientQuotas{Changes: []QuotaChange{{Entity: quota.Entity{User: &quota.Name{Name: "u"}}, Set: map[string]float64{quota.ProducerByteRate: 1024}}}}})
	s.Apply(18, &Command{AllocateProducerIDs: true})
	s.Apply(19, &Command{RecordGroupMetadata: &RecordGroupMetadata{Group: "g", Metadata: GroupMetadata{ProtocolType: "consumer", Generation: 3,
		Members: []GroupMember{{ID: "m", ClientID: "c", Assignment: []byte{0, 1}}}}}})
	s.Apply(20, &Command{InitTxnProducer: &InitTxnProducer{ID: "tx", TimeoutMs: 60000, ExpectedProducerID: -1, ExpectedEpoch: -1, NowMs: 1}})
	s.Apply(21, &Command{AddToTxn: &AddToTxn{ID: "tx", ProducerID: 2000, Partitions: map[string][]int32{"orders": {1}}, NowMs: 2}})

	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"ACLs", "BrokerConfigs", "Brokers", "ClientQuotas", "ClusterID", "GroupMetadata", "MetadataVoters", "NextNodeEpoch", "NextProducerID",
		"NextShard", "Offsets", "OffsetsLog", "Retired", "ScramCredentials", "Topics", "Transactions"}
	if !slices.Equal(names, want) {
		t.Fatalf("snapshot fields %v, want %v", names, want)
	}

	back := NewState()
	if err := json.Unmarshal(data, back); err != nil {
		t.Fatal(err)
	}
	back.reindex()
	s.reindex() // the derived indexes hold the same topics as pointers of their own
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("snapshot read back differs:\n%+v\nwant\n%+v", back, s)
	}
}
