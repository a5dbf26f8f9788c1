package brokerclient

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDiffACLs(t *testing.T) {
	acl := func(name string, op kmsg.ACLOperation) ACL {
		return ACL{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:a", Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
	}
	read, write, other := acl("t", kmsg.ACLOperationRead), acl("t", kmsg.ACLOperationWrite), acl("u", kmsg.ACLOperationRead)
	deny := read
	deny.Permission = kmsg.ACLPermissionTypeDeny
	for name, tc := range map[string]struct {
		want, have, create, remove []ACL
	}{
		"in step":         {[]ACL{read, write}, []ACL{write, read}, nil, nil},
		"missing":         {[]ACL{read, write}, []ACL{read}, []ACL{write}, nil},
		"extra":           {[]ACL{read}, []ACL{read, other}, nil, []ACL{other}},
		"none wanted":     {nil, []ACL{read, other}, nil, []ACL{read, other}},
		"asked for twice": {[]ACL{read, read}, nil, []ACL{read}, nil},
		"deny for allow":  {[]ACL{read}, []ACL{deny}, []ACL{read}, []ACL{deny}},
	} {
		create, remove := DiffACLs(tc.want, tc.have)
		if !slices.Equal(create, tc.create) || !slices.Equal(remove, tc.remove) {
			t.Errorf("%s: create %v remove %v, want %v %v", name, create, remove, tc.create, tc.remove)
		}
	}
}
