package controllers

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// credentialsTTL is how long a Secret the operator reaches a cluster with
// is kept. The brokers' and operator's passwords are never replaced
// (ensureInternalCredentials) and the CA is renewed long before it
// expires, so a short TTL only bounds how long a hand-made change takes.
const credentialsTTL = 30 * time.Second

// SecretCache keeps the Secrets that clusterAccess reads, per cluster, for
// credentialsTTL. Every reconcile of every Topic, User and ConsumerGroup
// needs them, and the manager does not cache Secrets (ClientOptions): a
// GitOps sync of 1,000 Topics would otherwise read the same two Secrets
// from the API server 2,000 times. Failed reads are not kept. A nil
// SecretCache reads every time.
type SecretCache struct {
	// now is the clock; time.Now when nil (tests set it).
	now  func() time.Time
	mu   sync.Mutex
	kept map[types.NamespacedName]keptSecret
}

type keptSecret struct {
	data map[string][]byte
	at   time.Time
}

// Data returns the data of the Secret key, read through r unless a read
// of it younger than credentialsTTL is kept.
func (c *SecretCache) Data(ctx context.Context, r client.Reader, key types.NamespacedName) (map[string][]byte, error) {
	if c == nil {
		return readSecret(ctx, r, key)
	}
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	c.mu.Lock()
	k, ok := c.kept[key]
	c.mu.Unlock()
	if ok && now().Sub(k.at) < credentialsTTL {
		return k.data, nil
	}
	at := now()
	data, err := readSecret(ctx, r, key)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kept == nil {
		c.kept = map[types.NamespacedName]keptSecret{}
	}
	c.kept[key] = keptSecret{data: data, at: at}
	return data, nil
}

func readSecret(ctx context.Context, r client.Reader, key types.NamespacedName) (map[string][]byte, error) {
	var s corev1.Secret
	if err := r.Get(ctx, key, &s); err != nil {
		return nil, err
	}
	return s.Data, nil
}
