// Package acl is Kafka's authorization model, as pure functions: ACL
// bindings (a resource pattern, a principal, a host, an operation, allow
// or deny), the decision whether a request is allowed, and the filters of
// DescribeAcls and DeleteAcls. The bindings live in the metadata Raft
// group (package meta); the broker asks Allowed for every request.
package acl
