// Command raftka is Raftka's command-line tool for people and scripts: it
// creates, lists, describes, alters and deletes topics, produces lines
// from stdin, consumes to stdout, shows and moves consumer groups, lists,
// describes and aborts transactions, and shows the cluster. It speaks only
// the Kafka protocol (franz-go), so it works against any broker of the
// cluster, and prints tables, or JSON with -o json.
package main
