package brokertest

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// InTransaction produces values, each as its record's key and value, in
// one transaction of the transactional client cl, and commits it or
// aborts it as commit says.
func InTransaction(ctx context.Context, cl *kgo.Client, commit bool, values ...string) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			return err
		}
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}
