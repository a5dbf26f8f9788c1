// Package certs makes the certificates the operator gives a cluster: a CA
// of the cluster's own, and the brokers' certificate for the mutual TLS of
// their Raft transport, renewed well before it expires; the listeners' and
// the users' certificates; and PKCS#12 stores of them for Java clients.
package certs
