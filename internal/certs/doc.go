// Package certs makes the certificates the operator gives a cluster: a CA
// of the cluster's own, and the brokers' certificate for the mutual TLS of
// their Raft transport, renewed well before it expires.
package certs
