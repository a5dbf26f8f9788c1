// Package clientsecurity owns how Raftka's own Kafka clients, the raftka
// command and the example consumer, connect to a listener that is not
// PLAINTEXT: Kafka's client settings (security protocol, SASL mechanism
// and credentials, TLS files) turned into franz-go options, so that each
// takes them as every Kafka client does.
package clientsecurity
