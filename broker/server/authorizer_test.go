package server

import (
	"testing"

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
		kmsg.OffsetDelete, kmsg.DescribeProducers, kmsg.DescribeClientQuotas, kmsg.AlterClientQuotas}
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
