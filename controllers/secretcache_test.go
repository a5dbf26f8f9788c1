package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingReader counts the Gets that reach the API server.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestSecretCacheKeepsReadsForItsTTL: within the TTL the API server is not
// asked again, after it the Secret as it is now is read, and a failed read
// is never kept.
func TestSecretCacheKeepsReadsForItsTTL(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: "credentials"}
	api := &countingReader{Reader: k8s}
	now := time.Unix(1_000_000, 0)
	cache := &SecretCache{now: func() time.Time { return now }}

	if _, err := cache.Data(ctx, api, key); !apierrors.IsNotFound(err) {
		t.Fatalf("read of a missing Secret: %v, want NotFound", err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}, Data: map[string][]byte{"operator": []byte("one")}}
	mustCreate(t, secret)
	read := func(want string, gets int32) {
		t.Helper()
		data, err := cache.Data(ctx, api, key)
		if err != nil {
			t.Fatal(err)
		}
		if string(data["operator"]) != want || api.gets.Load() != gets {
			t.Fatalf("read %q after %d API reads, want %q after %d", data["operator"], api.gets.Load(), want, gets)
		}
	}
	read("one", 2) // the missing Secret was not kept
	now = now.Add(credentialsTTL - time.Second)
	read("one", 2)
	secret.Data["operator"] = []byte("two")
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	read("one", 2)
	now = now.Add(time.Second)
	read("two", 3)
	var uncached *SecretCache
	if data, err := uncached.Data(ctx, api, key); err != nil || string(data["operator"]) != "two" || api.gets.Load() != 4 {
		t.Fatalf("a nil cache read %q (%v) after %d API reads, want every read to ask", data["operator"], err, api.gets.Load())
	}
}
