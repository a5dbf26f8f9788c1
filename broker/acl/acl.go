package acl

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Binding is one ACL: Kafka's AclBinding.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType // literal or prefixed
	Principal    string                      // "User:alice", or "User:*" for every user
	Host         string                      // an address, or "*" for every host
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType // allow or deny
}

// Wildcards of resource names, principals and hosts.
const (
	AnyResource  = "*"
	AnyPrincipal = "User:*"
	AnyHost      = "*"
)

// ClusterName is the one cluster resource's name, as Kafka names it.
const ClusterName = "kafka-cluster"

// Request is what a client asks to do.
type Request struct {
	Principal, Host string
	Operation       kmsg.ACLOperation
	ResourceType    kmsg.ACLResourceType
	ResourceName    string
}

// Allowed decides a request as Kafka's StandardAuthorizer does: a
// matching deny wins, then a matching allow permits, and with neither
// the request is refused. An allow of READ, WRITE, DELETE or ALTER
// implies DESCRIBE, and one of ALTER_CONFIGS implies DESCRIBE_CONFIGS.
func Allowed(bindings []Binding, req Request) bool {
	allowed := false
	for _, b := range bindings {
		if !b.covers(req) {
			continue
		}
		switch b.Permission {
		case kmsg.ACLPermissionTypeDeny:
			if b.Operation == kmsg.ACLOperationAll || b.Operation == req.Operation {
				return false
			}
		case kmsg.ACLPermissionTypeAllow:
			allowed = allowed || grants(b.Operation, req.Operation)
		}
	}
	return allowed
}

// covers tells whether a binding's resource, principal and host match a
// request's.
func (b Binding) covers(req Request) bool {
	if b.ResourceType != req.ResourceType || (b.Principal != req.Principal && b.Principal != AnyPrincipal) || (b.Host != req.Host && b.Host != AnyHost) {
		return false
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return b.ResourceName == req.ResourceName || b.ResourceName == AnyResource
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(req.ResourceName, b.ResourceName)
	}
	return false
}

// grants tells whether an allow of op permits asked.
func grants(op, asked kmsg.ACLOperation) bool {
	if op == kmsg.ACLOperationAll || op == asked {
		return true
	}
	switch asked {
	case kmsg.ACLOperationDescribe:
		return op == kmsg.ACLOperationRead || op == kmsg.ACLOperationWrite || op == kmsg.ACLOperationDelete || op == kmsg.ACLOperationAlter
	case kmsg.ACLOperationDescribeConfigs:
		return op == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// AllowsAny tells whether any resource of a type allows the operation to
// the principal at host, whatever its name: Kafka's rule for an
// idempotent producer without IDEMPOTENT_WRITE on the cluster, which may
// still have its producer id if it may write to some topic.
func AllowsAny(bindings []Binding, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	for _, b := range bindings {
		if b.ResourceType == rt && b.Permission == kmsg.ACLPermissionTypeAllow && grants(b.Operation, op) &&
			(b.Principal == principal || b.Principal == AnyPrincipal) && (b.Host == host || b.Host == AnyHost) {
			if Allowed(bindings, Request{Principal: principal, Host: host, Operation: op, ResourceType: rt, ResourceName: b.ResourceName}) {
				return true
			}
		}
	}
	return false
}

// Filter selects bindings, as DescribeAcls and DeleteAcls name them: a
// zero string or an ANY enum matches everything; the MATCH pattern type
// matches the bindings that would apply to a resource of that name
// (literal, the wildcard, and prefixes of it).
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Matches tells whether a binding is selected.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	if f.Permission != kmsg.ACLPermissionTypeAny && f.Permission != b.Permission {
		return false
	}
	if (f.Principal != nil && *f.Principal != b.Principal) || (f.Host != nil && *f.Host != b.Host) {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
		return f.ResourceName == nil || *f.ResourceName == b.ResourceName
	case kmsg.ACLResourcePatternTypeMatch:
		if f.ResourceName == nil {
			return true
		}
		name := *f.ResourceName
		switch b.PatternType {
		case kmsg.ACLResourcePatternTypeLiteral:
			return b.ResourceName == name || b.ResourceName == AnyResource
		case kmsg.ACLResourcePatternTypePrefixed:
			return strings.HasPrefix(name, b.ResourceName)
		}
		return false
	default:
		return f.PatternType == b.PatternType && (f.ResourceName == nil || *f.ResourceName == b.ResourceName)
	}
}

// Valid tells what is wrong with a binding to create, or "".
func (b Binding) Valid() string {
	switch {
	case b.ResourceType < kmsg.ACLResourceTypeTopic || b.ResourceType > kmsg.ACLResourceTypeTransactionalId:
		return "the resource type must be TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID"
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return "the pattern type must be LITERAL or PREFIXED"
	case b.ResourceName == "":
		return "the resource name is empty"
	case b.ResourceType == kmsg.ACLResourceTypeCluster && (b.ResourceName != ClusterName || b.PatternType != kmsg.ACLResourcePatternTypeLiteral):
		return "the cluster resource is the literal " + ClusterName
	case !strings.HasPrefix(b.Principal, "User:") || b.Principal == "User:":
		return "the principal must be User:NAME or User:*"
	case b.Host == "":
		return "the host is empty: use * for every host"
	case b.Operation < kmsg.ACLOperationAll || b.Operation > kmsg.ACLOperationIdempotentWrite:
		return "unknown operation"
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return "the permission must be ALLOW or DENY"
	}
	return ""
}
