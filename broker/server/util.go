package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func joinComma(s []string) string { return strings.Join(s, ", ") }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func apiName(key int16) string { return kmsg.NameForKey(key) }

// adminTimeout is how long an admin request may take: what the client
// asked, at least a second and at most most.
func adminTimeout(millis int32, most time.Duration) time.Duration {
	return min(max(time.Duration(millis)*time.Millisecond, time.Second), most)
}
