// Package kafkaerr turns an error into the Kafka error code a response
// carries: the one place that rule lives for the front door, the
// metadata quorum and the replicas' forced recovery.
package kafkaerr

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Of is the Kafka error that err is or wraps, else otherwise.
func Of(err error, otherwise *kerr.Error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return otherwise
}

// Code is the code of the Kafka error that err is or wraps, else
// UNKNOWN_SERVER_ERROR's.
func Code(err error) int16 { return Of(err, kerr.UnknownServerError).Code }
