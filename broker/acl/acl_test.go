package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
	read    = kmsg.ACLOperationRead
	write   = kmsg.ACLOperationWrite
	all     = kmsg.ACLOperationAll
	descr   = kmsg.ACLOperationDescribe
)

func TestAllowed(t *testing.T) {
	bindings := []Binding{
		{topic, "orders", literal, "User:alice", "*", write, allow},
		{topic, "team-a.", prefix, "User:bob", "*", all, allow},
		{topic, "team-a.secret", literal, "User:bob", "*", read, deny},
		{topic, "*", literal, "User:*", "*", descr, allow},
		{group, "billing", literal, "User:carol", "10.0.0.7", read, allow},
		{topic, "audit", literal, "User:*", "*", all, deny},
		{topic, "audit", literal, "User:dave", "*", read, allow},
		{cluster, ClusterName, literal, "User:ops", "*", kmsg.ACLOperationAlterConfigs, allow},
	}
	for _, tc := range []struct {
		name      string
		principal string
		host      string
		op        kmsg.ACLOperation
		rt        kmsg.ACLResourceType
		resource  string
		want      bool
	}{
		{"literal allow", "User:alice", "1.2.3.4", write, topic, "orders", true},
		{"another operation", "User:alice", "1.2.3.4", read, topic, "orders", false},
		{"another topic", "User:alice", "1.2.3.4", write, topic, "orders2", false},
		{"write implies describe", "User:alice", "1.2.3.4", descr, topic, "orders", true},
		{"prefixed", "User:bob", "h", write, topic, "team-a.payments", true},
		{"prefix does not match", "User:bob", "h", write, topic, "team-b.payments", false},
		{"deny overrides the prefixed allow", "User:bob", "h", read, topic, "team-a.secret", false},
		{"deny of read leaves write", "User:bob", "h", write, topic, "team-a.secret", true},
		{"wildcard principal and resource", "User:eve", "h", descr, topic, "anything", true},
		{"wildcard describe grants nothing more", "User:eve", "h", read, topic, "anything", false},
		{"host matches", "User:carol", "10.0.0.7", read, group, "billing", true},
		{"host differs", "User:carol", "10.0.0.8", read, group, "billing", false},
		{"deny all for everyone beats a user's allow", "User:dave", "h", read, topic, "audit", false},
		{"alter configs implies describe configs", "User:ops", "h", kmsg.ACLOperationDescribeConfigs, cluster, ClusterName, true},
		{"but not alter", "User:ops", "h", kmsg.ACLOperationAlter, cluster, ClusterName, false},
		{"no binding", "User:zed", "h", write, group, "g", false},
		{"resource types stay apart", "User:alice", "h", write, group, "orders", false},
	} {
		got := Allowed(bindings, Request{Principal: tc.principal, Host: tc.host, Operation: tc.op, ResourceType: tc.rt, ResourceName: tc.resource})
		if got != tc.want {
			t.Errorf("%s: allowed %v, want %v", tc.name, got, tc.want)
		}
	}
	if !AllowsAny(bindings, "User:alice", "h", write, topic) || AllowsAny(bindings, "User:carol", "10.0.0.7", write, topic) {
		t.Error("AllowsAny: alice may write some topic, carol none")
	}
}

func TestFilterMatches(t *testing.T) {
	b := Binding{topic, "team-a.", prefix, "User:bob", "*", all, allow}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"any", Filter{kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, true},
		{"exact", Filter{topic, str("team-a."), prefix, str("User:bob"), str("*"), all, allow}, true},
		{"match by a resource name", Filter{topic, str("team-a.x"), kmsg.ACLResourcePatternTypeMatch, nil, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, true},
		{"match by another name", Filter{topic, str("team-b.x"), kmsg.ACLResourcePatternTypeMatch, nil, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, false},
		{"literal is not prefixed", Filter{topic, str("team-a."), literal, nil, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, false},
		{"another principal", Filter{kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, str("User:alice"), nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, false},
		{"another permission", Filter{kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil, nil, kmsg.ACLOperationAny, deny}, false},
	} {
		if got := tc.f.Matches(b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
