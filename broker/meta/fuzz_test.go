package meta

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/acl"
	"github.com/raftka/raftka/broker/quota"
)

// commandsFrom turns fuzz bytes into metadata commands over a small
// universe of brokers, topics and partitions, so that most of them apply.
func commandsFrom(data []byte) []Command {
	var out []Command
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		v := int(data[0])
		data = data[1:]
		return v
	}
	brokerList := func() []int32 {
		n := next() % 5
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(next() % 6)
		}
		return ids
	}
	topics := []string{"a", "b"}
	for len(data) > 0 {
		topic := topics[next()%2]
		switch next() % 25 {
		case 0:
			out = append(out, Command{RegisterBroker: &Broker{ID: int32(next() % 5), RaftAddr: "r", Incarnation: string(rune('a' + next()%3)), Generation: uint32(next() % 3)}})
		case 1:
			out = append(out, Command{JoinBroker: &Broker{ID: int32(next() % 5), RaftAddr: "r", Incarnation: string(rune('a' + next()%4))}})
		case 2:
			out = append(out, Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: topic, Partitions: int32(next()%4) - 1, ReplicationFactor: int16(next() % 4)}})
		case 3:
			var assignment [][]int32
			for i := next() % 3; i > 0; i-- {
				assignment = append(assignment, brokerList())
			}
			out = append(out, Command{CreateTopic: &CreateTopic{Placement: PlacementEpochs, Name: topic, Assignment: assignment}})
		case 4:
			out = append(out, Command{CreatePartitions: &CreatePartitions{Placement: PlacementEpochs, Name: topic, Count: int32(next() % 6), Ordered: next()%2 == 0, At: int64(next())}})
		case 16:
			out = append(out, Command{RecordSplit: &RecordSplit{Topic: topic, Seq: next() % 3, Partition: int32(next()%5) - 1, Offset: int64(next()), At: int64(next())}})
		case 17:
			out = append(out, Command{AdvanceHold: &AdvanceHold{Topic: topic, Seq: next() % 3, Partition: int32(next()%5) - 1, Scanned: int64(next()),
				MovedIn: int64(next()) - 1, Release: int64(next()), StaleAt: int64(next())}})
		case 18:
			out = append(out, Command{LiftGrowth: &LiftGrowth{Topic: topic, Seq: next() % 3, Reason: []string{"drained", "bound"}[next()%2], At: int64(next())}})
		case 5:
			out = append(out, Command{Reassign: &Reassign{Topic: topic, Partition: int32(next()%3) - 1, Target: brokerList(), Cancel: next()%4 == 0}})
		case 6:
			out = append(out, Command{CompleteReassignment: &CompleteReassignment{Shard: FirstPartitionShard + uint64(next()%6), Target: brokerList()}})
		case 7:
			out = append(out, Command{RenewReplicaNode: &RenewReplicaNode{Shard: FirstPartitionShard + uint64(next()%6), Broker: int32(next() % 5), Node: RaftNodeID(int32(next()%5), uint32(next()%4))}})
		case 9:
			var voters []uint64
			for i := next() % 4; i > 0; i-- {
				voters = append(voters, RaftNodeID(int32(next()%5), uint32(next()%4)))
			}
			out = append(out, Command{RecoverPartition: &RecoverPartition{Shard: FirstPartitionShard + uint64(next()%6), Node: RaftNodeID(int32(next()%5), uint32(next()%4)), Voters: voters, CommittedEnd: int64(next())}})
		case 11:
			out = append(out, Command{UnregisterBroker: &UnregisterBroker{ID: int32(next() % 5)}})
		case 10:
			out = append(out, Command{CompleteRecovery: &CompleteRecovery{Shard: FirstPartitionShard + uint64(next()%6), Node: RaftNodeID(int32(next()%5), uint32(next()%4)), RecoveredEnd: int64(next())}})
		case 12:
			out = append(out, Command{SetMetadataVoters: &SetMetadataVoters{Voters: brokerList()}})
		case 14:
			b := acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: topic, PatternType: kmsg.ACLResourcePatternTypeLiteral,
				Principal: "User:" + string(rune('a'+next()%3)), Host: "*", Operation: kmsg.ACLOperation(2 + next()%3), Permission: kmsg.ACLPermissionType(2 + next()%2)}
			if next()%2 == 0 {
				out = append(out, Command{DeleteACLs: &DeleteACLs{Bindings: []acl.Binding{b}}})
			} else {
				out = append(out, Command{CreateACLs: &CreateACLs{Bindings: []acl.Binding{b, b}}})
			}
		case 13:
			user, mech := string(rune('a'+next()%3)), []string{ScramSHA256, ScramSHA512}[next()%2]
			if next()%2 == 0 {
				out = append(out, Command{AlterScramCredentials: &AlterScramCredentials{Deletions: []ScramDeletion{{User: user, Mechanism: mech}}}})
			} else {
				cred := ScramCredential{Salt: []byte{byte(next())}, StoredKey: []byte{byte(next())}, ServerKey: []byte{byte(next())}, Iterations: 4096}
				out = append(out, Command{AlterScramCredentials: &AlterScramCredentials{Upserts: []ScramUpsert{{User: user, Mechanism: mech, Credential: cred}}}})
			}
		case 15:
			entity := quota.Entity{User: &quota.Name{Name: string(rune('a' + next()%2))}}
			if next()%2 == 0 {
				entity.ClientID = &quota.Name{Default: true}
			}
			key := []string{quota.ProducerByteRate, quota.ConsumerByteRate}[next()%2]
			if next()%2 == 0 {
				out = append(out, Command{AlterClientQuotas: &AlterClientQuotas{Changes: []QuotaChange{{Entity: entity, Remove: []string{key}}}}})
			} else {
				out = append(out, Command{AlterClientQuotas: &AlterClientQuotas{Changes: []QuotaChange{{Entity: entity, Set: map[string]float64{key: float64(1 + next())}}}}})
			}
		case 19:
			out = append(out, Command{InitTxnProducer: &InitTxnProducer{ID: topic, TimeoutMs: int32(next()), ExpectedProducerID: int64(next()%3) + 999,
				ExpectedEpoch: int16(next()%3) - 1, NowMs: int64(next())}})
		case 20:
			add := &AddToTxn{ID: topic, ProducerID: int64(next()%3) + 1000, Epoch: int16(next() % 3), NowMs: int64(next())}
			if next()%2 == 0 {
				add.Group = "g"
			} else {
				add.Partitions = map[string][]int32{topic: {int32(next() % 4), int32(next() % 4)}}
			}
			out = append(out, Command{AddToTxn: add})
		case 21:
			out = append(out, Command{TxnCommitOffsets: &TxnCommitOffsets{ID: topic, ProducerID: int64(next()%3) + 1000, Epoch: int16(next() % 3), Group: "g",
				Offsets: map[string]map[int32]GroupOffset{topic: {int32(next() % 4): {Offset: int64(next())}}}, AddGroup: next()%2 == 0, NowMs: int64(next()) * 1000}})
		case 22:
			out = append(out, Command{EndTxn: &EndTxn{ID: topic, ProducerID: int64(next()%3) + 1000, Epoch: int16(next() % 3), Commit: next()%2 == 0,
				Bump: next()%2 == 0, Timeout: next()%4 == 0, NowMs: int64(next()) * 1000}})
		case 23:
			out = append(out, Command{MarkersWritten: &MarkersWritten{Markers: []WrittenMarker{{ID: topic, Seq: int64(next() % 3), Topic: topic, Partition: int32(next() % 4)}}}})
		case 24:
			out = append(out, Command{RecordDelivered: &RecordDelivered{Topic: topic, Seq: next() % 3, Partition: int32(next()%5) - 1,
				Release: int64(next()), Offset: int64(next()) - 1}})
		case 8:
			out = append(out, Command{Leader: &LeaderChange{Shard: FirstPartitionShard + uint64(next()%6), Leader: int32(next() % 5), Epoch: int32(next() % 4), Node: RaftNodeID(int32(next()%5), uint32(next()%4))}})
		}
	}
	return out
}

// FuzzApply applies command sequences to the metadata: it never panics;
// two replicas applying the same entries, one of them recovering from a
// snapshot halfway, end in the same state; and placement stays sound:
// every partition's replicas are distinct known brokers with a node each
// of their own broker, no two alike, and a move's target is among them;
// the recorded metadata voters are registered brokers; each transactional
// id keeps a producer of its own and holds partitions and offsets only
// while a transaction is open or ending; a user with no
// SCRAM credential left is forgotten; no ACL is kept twice.
func FuzzApply(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 2, 0, 0, 0, 2, 0, 2, 3, 2, 1, 5, 2, 3, 1, 2, 3, 0, 1, 6, 1, 3, 1, 2, 3})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 2, 2, 0, 1, 3, 0, 2, 2, 1, 2, 3, 0, 0, 1, 1, 3, 3, 1, 4, 0, 5, 0, 1, 4, 2, 0, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		cmds := commandsFrom(data)
		a, b := NewState(), NewState()
		for i, c := range cmds {
			ca, cb := c, c // Apply may keep pointers; each replica decodes its own
			a.Apply(uint64(i+1), decoded(t, &ca))
			b.Apply(uint64(i+1), decoded(t, &cb))
			if i == len(cmds)/2 {
				b = recovered(t, b)
			}
		}
		if !reflect.DeepEqual(snapshotOf(t, a), snapshotOf(t, b)) {
			t.Fatalf("replicas diverged:\n%s\n%s", snapshotOf(t, a), snapshotOf(t, b))
		}
		for i, b := range a.acls {
			if slices.Contains(a.acls[i+1:], b) {
				t.Fatalf("ACL %+v is kept twice", b)
			}
		}
		for id, tx := range a.transactions {
			if a.txnByProducer[tx.ProducerID] != id {
				t.Fatalf("transaction %q's producer %d is indexed as %q's", id, tx.ProducerID, a.txnByProducer[tx.ProducerID])
			}
			if !tx.Open() && !tx.Ending() && (len(tx.Partitions) > 0 || len(tx.Offsets) > 0 || len(tx.Written) > 0) {
				t.Fatalf("transaction %q in state %s keeps partitions %v or offsets %v", id, tx.State, tx.Partitions, tx.Offsets)
			}
			if _, indexed := a.txnActive[id]; indexed != (tx.Open() || tx.Ending()) {
				t.Fatalf("transaction %q in state %s is indexed as active: %v", id, tx.State, indexed)
			}
		}
		if len(a.txnActive) != len(b.txnActive) {
			t.Fatalf("a replica indexes %d active transactions, its recovered copy %d", len(a.txnActive), len(b.txnActive))
		}
		if len(a.txnByProducer) != len(a.transactions) {
			t.Fatalf("%d producers indexed for %d transactional ids", len(a.txnByProducer), len(a.transactions))
		}
		for i, q := range a.clientQuotas {
			if len(q.Values) == 0 || slices.ContainsFunc(a.clientQuotas[i+1:], func(o quota.Config) bool { return o.Entity.Equal(q.Entity) }) {
				t.Fatalf("client quota of %s kept empty or twice: %+v", q.Entity, a.clientQuotas)
			}
		}
		for user, creds := range a.scramCredentials {
			if len(creds) == 0 {
				t.Fatalf("user %q is kept with no SCRAM credential", user)
			}
		}
		for _, id := range a.metadataVoters {
			if _, ok := a.brokers[id]; !ok {
				t.Fatalf("metadata voter %d is not a registered broker: %v", id, a.metadataVoters)
			}
		}
		for _, topic := range a.topics {
			for _, p := range topic.Partitions {
				if t2, p2 := a.PartitionOfShard(p.Shard); t2 != topic || p2.Index != p.Index {
					t.Fatalf("shard %d indexes %v, want %s-%d", p.Shard, p2, topic.Name, p.Index)
				}
				seen := map[int32]bool{}
				nodes := map[uint64]bool{}
				for _, id := range p.Replicas {
					n := p.NodeOf(id)
					if seen[id] || BrokerOfNode(n) != id || nodes[n] {
						t.Fatalf("partition %s-%d: replicas %v nodes %v", topic.Name, p.Index, p.Replicas, p.Nodes)
					}
					seen[id], nodes[n] = true, true
				}
				if p.Nodes != nil && len(p.Nodes) != len(p.Replicas) {
					t.Fatalf("partition %s-%d: %d nodes for %d replicas", topic.Name, p.Index, len(p.Nodes), len(p.Replicas))
				}
				if r := p.Reassignment; r != nil {
					for _, id := range append(append([]int32(nil), r.Target...), r.Original...) {
						if !seen[id] {
							t.Fatalf("partition %s-%d: move %+v names %d outside replicas %v", topic.Name, p.Index, r, id, p.Replicas)
						}
					}
				}
			}
		}
	})
}

func decoded(t *testing.T, c *Command) *Command {
	var out Command
	if err := json.Unmarshal(c.Encode(), &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func snapshotOf(t *testing.T, s *State) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func recovered(t *testing.T, s *State) *State {
	out := NewState()
	if err := json.Unmarshal([]byte(snapshotOf(t, s)), out); err != nil {
		t.Fatal(err)
	}
	out.reindex()
	return out
}
