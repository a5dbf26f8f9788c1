package server

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every API the broker serves is authorized: in its handler, by the
// cluster gate, or not at all for the few a client needs before it has
// authenticated. A new API fails this until it is placed.
func TestEveryAPIIsAuthorized(t *testing.T) {
	unauthorized := []kmsg.Key{kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate}
	inHandler := []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.OffsetCommit, kmsg.OffsetFetch,
		kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.SyncGroup, kmsg.DescribeGroups, kmsg.ListGroups,
		kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.InitProducerID, kmsg.OffsetForLeaderEpoch, kmsg.DescribeACLs, kmsg.CreateACLs,
		kmsg.DeleteACLs, kmsg.DescribeConfigs, kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs, kmsg.DescribeCluster,
		kmsg.DescribeUserSCRAMCredentials, kmsg.AlterUserSCRAMCredentials, kmsg.CreatePartitions, kmsg.DeleteRecords, kmsg.DeleteGroups,
		kmsg.OffsetDelete, kmsg.DescribeProducers, kmsg.DescribeClientQuotas, kmsg.AlterClientQuotas, kmsg.AddPartitionsToTxn,
		kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.TxnOffsetCommit, kmsg.DescribeTransactions, kmsg.ListTransactions}
	placed := map[kmsg.Key]bool{}
	for _, k := range append(unauthorized, inHandler...) {
		placed[k] = true
	}
	for k := range clusterGated {
		if placed[k] {
			t.Errorf("%s is both gated and authorized in its handler", k.Name())
		}
		placed[k] = true
	}
	for key := range handlers {
		if !placed[kmsg.Key(key)] {
			t.Errorf("%s is served but not authorized", kmsg.NameForKey(key))
		}
	}
}

// Every cluster-gated API has Kafka's answer for a principal without the
// operation, at every version served: CLUSTER_AUTHORIZATION_FAILED where
// the response has an error, rather than a closed connection.
func TestEveryGatedAPIIsAnsweredWhenDenied(t *testing.T) {
	for key := range clusterGated {
		h := handlers[int16(key)]
		for v := h.min; v <= h.max; v++ {
			req := kmsg.RequestForKey(int16(key))
			req.SetVersion(v)
			resp, err := deniedOnCluster(nil, &request{kreq: req})
			if err != nil {
				t.Errorf("%s v%d: %v", key.Name(), v, err)
				continue
			}
			if resp.Key() != int16(key) || resp.GetVersion() != v {
				t.Errorf("%s v%d: answered as %s v%d", key.Name(), v, kmsg.NameForKey(resp.Key()), resp.GetVersion())
			}
			if code := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); !code.IsValid() || code.Int() != int64(kerr.ClusterAuthorizationFailed.Code) {
				t.Errorf("%s v%d: answered without CLUSTER_AUTHORIZATION_FAILED: %+v", key.Name(), v, resp)
			}
		}
	}
}
