// Package quota is Kafka's client quota model, pure: entities (a user, a
// client id, or both, each named or the default), the precedence that
// picks a client's quota among them, and the windowed rate and throttle
// time Kafka's brokers compute. The broker keeps the configs in the
// metadata Raft group and measures each broker's own traffic with it.
package quota
