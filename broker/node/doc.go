// Package node is the Raftka broker's composition root. Broker builds the
// broker's parts, starts them as a list of named steps (Start) and stops
// them in order (Close); it owns nothing the parts do not need it to:
// Dragonboat's NodeHost, the metadata state machine, the proposals to the
// metadata group, the HTTP endpoint (health, readiness, safe-to-restart,
// /metrics) and the Prometheus registry.
//
// The parts it composes each own one concern and its loops, and take what
// they need explicitly: package server (the Kafka front door), package
// replica (the partition replicas' lifecycle), package cluster (liveness,
// the metadata quorum, this broker's incarnation, peer HTTP), package
// security (listeners, TLS, SASL, ACLs, quotas) and package groups (the
// group coordinator). Network, disk checks and time live at these edges;
// the replicated state machines in packages meta and partition stay
// deterministic and never import them.
package node
