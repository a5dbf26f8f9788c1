package node

import (
	"strconv"
	"strings"
)

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func joinComma(s []string) string { return strings.Join(s, ", ") }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
