package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

func errCode(err error) int16 { return kafkaError(err, kerr.UnknownServerError).Code }

// kafkaError is the Kafka error that err is or wraps, else otherwise.
func kafkaError(err error, otherwise *kerr.Error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return otherwise
}
