// Package security owns who may connect to a broker and what they may do:
// named Kafka listeners, each PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
// (listeners.go); TLS from PEM files that are read again when they change
// (tls.go); SASL with SCRAM, whose exchange is ours (scram.go), and PLAIN,
// both checked against the SCRAM credentials the metadata keeps (sasl.go);
// the users directory that keeps some of those credentials in step with a
// mounted Secret (scramusers.go); the ACL authorizer (authorizer.go); and
// client quotas, measured per broker (quotas.go).
//
// It takes the metadata through small interfaces (Credentials, ACLs,
// QuotaConfigs), never the broker: the composition root (package node)
// builds these parts, and the front door (package server) binds the
// listeners and calls them from each connection.
package security
