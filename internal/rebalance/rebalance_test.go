package rebalance

import (
	"reflect"
	"testing"
)

func brokers(racks ...string) []Broker {
	out := make([]Broker, len(racks))
	for i, r := range racks {
		out[i] = Broker{ID: int32(i), Rack: r}
	}
	return out
}

func TestReplicationFactor(t *testing.T) {
	cases := []struct {
		name    string
		layout  Layout
		rf      int
		want    map[int32][]int32
		wantErr bool
	}{
		{
			name: "1 to 3 on the least loaded brokers",
			layout: Layout{Brokers: brokers("", "", "", ""), Partitions: []Partition{
				{Topic: "t", Index: 0, Replicas: []int32{0}},
				{Topic: "t", Index: 1, Replicas: []int32{1}},
				{Topic: "busy", Index: 0, Replicas: []int32{2, 3}},
			}},
			rf:   3,
			want: map[int32][]int32{0: {0, 1, 2}, 1: {1, 0, 3}},
		},
		{
			name: "new replicas go to racks the partition lacks before less loaded brokers",
			layout: Layout{Brokers: brokers("a", "a", "b", "b"), Partitions: []Partition{
				{Topic: "t", Index: 0, Replicas: []int32{0}},
				{Topic: "other", Index: 0, Replicas: []int32{2, 3}},
				{Topic: "other", Index: 1, Replicas: []int32{2, 3}},
			}},
			rf:   2,
			want: map[int32][]int32{0: {0, 2}},
		},
		{
			name: "3 to 2 keeps the preferred leader and drops a replica sharing a rack",
			layout: Layout{Brokers: brokers("a", "b", "b"), Partitions: []Partition{
				{Topic: "t", Index: 0, Replicas: []int32{1, 2, 0}},
			}},
			rf:   2,
			want: map[int32][]int32{0: {1, 0}},
		},
		{
			name: "3 to 2 without racks drops the most loaded broker",
			layout: Layout{Brokers: brokers("", "", "", ""), Partitions: []Partition{
				{Topic: "t", Index: 0, Replicas: []int32{0, 1, 2}},
				{Topic: "other", Index: 0, Replicas: []int32{1, 3}},
			}},
			rf:   2,
			want: map[int32][]int32{0: {0, 2}},
		},
		{
			name: "partitions already at the factor are left alone",
			layout: Layout{Brokers: brokers("", "", ""), Partitions: []Partition{
				{Topic: "t", Index: 0, Replicas: []int32{0, 1}},
				{Topic: "t", Index: 1, Replicas: []int32{2}},
			}},
			rf:   2,
			want: map[int32][]int32{1: {2, 0}},
		},
		{
			name:    "more replicas than brokers",
			layout:  Layout{Brokers: brokers("", ""), Partitions: []Partition{{Topic: "t", Index: 0, Replicas: []int32{0}}}},
			rf:      3,
			wantErr: true,
		},
	}
	for _, c := range cases {
		got, err := ReplicationFactor(c.layout, "t", c.rf)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v", c.name, err)
			continue
		}
		if !c.wantErr && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
