package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// request is one decoded Kafka request on a connection.
type request struct {
	conn     *clientConn
	clientID string
	kreq     kmsg.Request
	// arrived is when the request's size was read off the socket: its
	// body's transfer and decoding come after.
	arrived time.Time
	// deferred, when a handler sets it, produces the response later; the
	// connection still answers in request order.
	deferred func() kmsg.Response
	// written, when a handler sets it, is called once the response went
	// to the socket.
	written func()
	// closeAfter, when a handler sets it, closes the connection once the
	// response is written (a failed authentication).
	closeAfter bool
}

type handlerFunc func(srv *Server, r *request) (kmsg.Response, error)

type apiHandler struct {
	min, max int16
	handle   handlerFunc
}

// handlers is the dispatch table: one entry per supported API key, filled by
// the init function of that API's file.
var handlers = map[int16]apiHandler{}

func register(key kmsg.Key, min, max int16, fn handlerFunc) {
	if kmsg.RequestForKey(int16(key)).MaxVersion() < max {
		panic("kmsg cannot encode " + key.Name() + " at the registered version")
	}
	handlers[int16(key)] = apiHandler{min: min, max: max, handle: fn}
}
