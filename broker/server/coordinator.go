package server

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/raftka/raftka/broker/meta"
)

// isCoordinator reports whether this broker coordinates groups now.
func (srv *Server) isCoordinator() bool {
	id, ok := srv.MetaLeader()
	return ok && id == srv.cfg.ID
}

// coordinatorRefusal is nil when this broker coordinates groups and its
// metadata replica has applied every commit the metadata group made
// before this broker's term began; else the error to answer. A
// coordinator just elected may not have applied them yet: in issue 39's
// crash test it answered offsets seconds old and consumers went back to
// them, and the membership it loads (groups/load.go) must be the latest
// recorded. Kafka's coordinator answers COORDINATOR_LOAD_IN_PROGRESS while
// it loads __consumer_offsets, and clients ask again. One read barrier per
// term suffices: later in the term every group command is this leader's
// own, answered only once applied here.
func (srv *Server) coordinatorRefusal() *kerr.Error {
	if !srv.isCoordinator() {
		return kerr.NotCoordinator
	}
	term := srv.Replicas.Term(meta.MetadataShard)
	if term > 0 && srv.caughtUpTerm.Load() == term {
		return nil
	}
	if srv.metaBarrier() != nil {
		return kerr.CoordinatorLoadInProgress
	}
	srv.caughtUpTerm.Store(term)
	return nil
}
