package server

import (
	"context"
	"time"
)

// takeConnSlot waits for room for one more connection
// (Config.MaxConnections); false once ctx ends. While it waits, clients'
// connections queue in the listen backlog, as with Kafka's
// max.connections.
func (srv *Server) takeConnSlot(ctx context.Context) bool {
	select {
	case srv.connSlots <- struct{}{}:
		return true
	default:
	}
	if last := srv.connsFullLogged.Load(); time.Since(time.Unix(0, last)) > time.Minute && srv.connsFullLogged.CompareAndSwap(last, time.Now().UnixNano()) {
		srv.Log.Warn("connection limit reached: no more Kafka connections are accepted until one closes (--max-connections)", "max_connections", cap(srv.connSlots))
	}
	select {
	case srv.connSlots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// touch marks the connection active: a request read, an answer written.
func (c *clientConn) touch() { c.active.Store(time.Now().UnixNano()) }

// closeWhenIdle closes the connection once it has been idle for
// Config.ConnectionsMaxIdle, and returns what stops watching it.
func (c *clientConn) closeWhenIdle() (stop func()) {
	idle := c.srv.cfg.ConnectionsMaxIdle
	if idle <= 0 {
		return func() {}
	}
	stopped := make(chan struct{})
	var timer *time.Timer
	check := func() {
		select {
		case <-stopped:
			return
		default:
		}
		since := time.Since(time.Unix(0, c.active.Load()))
		if since < idle {
			timer.Reset(idle - since)
			return
		}
		c.srv.Log.Debug("closing idle connection (--connections-max-idle)", "remote", c.nc.RemoteAddr().String(), "idle", since.Round(time.Second).String())
		c.nc.Close()
	}
	// Armed only once timer is set, for check to read it.
	timer = time.AfterFunc(time.Hour, check)
	timer.Reset(idle)
	return func() {
		close(stopped)
		timer.Stop()
	}
}
