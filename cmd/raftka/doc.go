// Command raftka is Raftka's command-line tool for people and scripts: it
// creates, lists, describes, alters and deletes topics, produces lines
// from stdin, consumes to stdout, shows, moves and deletes consumer
// groups, lists, describes and aborts transactions, keeps users, ACLs and
// quotas, checks topics for lost records, and runs the cluster's admin
// operations (health, records deleted, leader elections, reassignments,
// the metadata quorum, broker configs). It speaks only the Kafka protocol
// (franz-go), so it works against any broker of the cluster, and prints
// tables, or JSON with -o json.
//
// The command tree is cobra's, built from one table (commands.go): each
// command's words, help and a builder that declares its flags and returns
// what runs. A mistake in the command line exits 2, a refusal 1. The
// brokers and credentials come from the flags, the RAFTKA_* environment,
// or a profile (profile.go).
package main
