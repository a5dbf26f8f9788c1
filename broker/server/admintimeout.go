package server

import "time"

// adminTimeout is how long an admin request may take: what the client
// asked, at least a second and at most most.
func adminTimeout(millis int32, most time.Duration) time.Duration {
	return min(max(time.Duration(millis)*time.Millisecond, time.Second), most)
}
