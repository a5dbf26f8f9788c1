package kafkaerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{kerr.InvalidRequest, kerr.InvalidRequest},
		{fmt.Errorf("recovery: %w", kerr.NotController), kerr.NotController},
		{errors.New("disk on fire"), kerr.RequestTimedOut},
		{nil, kerr.RequestTimedOut},
	} {
		if got := Of(tc.err, kerr.RequestTimedOut); got != tc.want {
			t.Errorf("Of(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if got := Code(errors.New("x")); got != kerr.UnknownServerError.Code {
		t.Errorf("Code of a plain error = %d, want UNKNOWN_SERVER_ERROR", got)
	}
}
