package server

// isCoordinator reports whether this broker coordinates groups now.
func (srv *Server) isCoordinator() bool {
	id, ok := srv.MetaLeader()
	return ok && id == srv.cfg.ID
}
