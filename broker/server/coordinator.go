package server

// isCoordinator reports whether this broker coordinates groups now.
func (b *Broker) isCoordinator() bool {
	id, ok := b.metaLeader()
	return ok && id == b.cfg.ID
}
