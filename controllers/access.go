package controllers

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/specs"
	"github.com/raftka/raftka/internal/tenancy"
)

// clusterAccess is how the operator reaches a cluster's brokers: the
// replication listener with the operator's own credential from the
// internal credentials Secret, over TLS checked against the cluster's CA
// where the cluster was founded so, or the one listener of a cluster
// without listeners of its own. Its Secrets are read through secrets.
func clusterAccess(ctx context.Context, r client.Reader, pool *brokerclient.Clients, secrets *SecretCache, c *raftkav1.BrokerCluster) (brokerclient.Access, error) {
	access := brokerclient.Access{Addrs: []string{specs.OperatorBootstrap(c)}}
	if specs.Secured(c) {
		credentials := types.NamespacedName{Namespace: c.Namespace, Name: specs.InternalCredentialsName(c)}
		data, err := secrets.Data(ctx, r, credentials)
		if err != nil {
			return brokerclient.Access{}, fmt.Errorf("the operator's credential for cluster %s: %w", c.Name, err)
		}
		password := string(data[specs.OperatorUser])
		if password == "" {
			return brokerclient.Access{}, fmt.Errorf("the operator's credential for cluster %s: Secret %s has no %s", c.Name, credentials.Name, specs.OperatorUser)
		}
		access.User, access.Password = specs.OperatorUser, password
		founding, err := foundingOf(ctx, r, c)
		if err != nil {
			return brokerclient.Access{}, err
		}
		if founding.ReplicationTLS {
			ca, err := secrets.Data(ctx, r, types.NamespacedName{Namespace: c.Namespace, Name: specs.CASecretName(c)})
			if err != nil {
				return brokerclient.Access{}, fmt.Errorf("the CA of cluster %s: %w", c.Name, err)
			}
			access.CACert = ca[corev1.TLSCertKey]
		}
	}
	return pool.Bootstrap(c.Namespace, c.Name, access), nil
}

// newPassword is a random password: 26 letters and digits, 130 bits.
func newPassword() string { return rand.Text() }

// ensureInternalCredentials creates the brokers' and the operator's
// passwords once, and adds either if it went missing; a password that
// exists is never replaced, so the brokers' credentials stay valid.
func (r *BrokerClusterReconciler) ensureInternalCredentials(ctx context.Context, c *raftkav1.BrokerCluster) error {
	if !specs.Secured(c) {
		return nil
	}
	var current corev1.Secret
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.InternalCredentialsName(c)}, &current)
	if apierrors.IsNotFound(err) {
		secret := specs.BuildInternalCredentials(c, newPassword(), newPassword())
		if err := controllerutil.SetControllerReference(c, secret, r.Scheme()); err != nil {
			return err
		}
		return r.Create(ctx, secret)
	}
	if err != nil {
		return err
	}
	changed := false
	for _, user := range []string{specs.BrokerUser, specs.OperatorUser} {
		if len(current.Data[user]) == 0 {
			if current.Data == nil {
				current.Data = map[string][]byte{}
			}
			current.Data[user] = []byte(newPassword())
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return r.Update(ctx, &current)
}

// errNotAdmitted: an object's namespace may not use the cluster it names,
// or its names break the tenants' rule; no retry mends it.
type errNotAdmitted struct{ err error }

func (e errNotAdmitted) Error() string { return e.err.Error() }

// tenantCluster returns the BrokerCluster that an object of namespace ns
// names, once its namespace is admitted to it (spec.tenants).
func tenantCluster(ctx context.Context, r client.Reader, ns string, ref raftkav1.ClusterReference) (*raftkav1.BrokerCluster, error) {
	cns, name := ref.ClusterKey(ns)
	var cluster raftkav1.BrokerCluster
	if err := r.Get(ctx, types.NamespacedName{Namespace: cns, Name: name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s/%s", errClusterMissing, cns, name)
		}
		return nil, err
	}
	var labels map[string]string
	if cns != ns {
		var namespace corev1.Namespace
		if err := r.Get(ctx, types.NamespacedName{Name: ns}, &namespace); err != nil {
			return nil, err
		}
		labels = namespace.Labels
	}
	if err := tenancy.Admits(&cluster, ns, labels); err != nil {
		return nil, errNotAdmitted{err}
	}
	return &cluster, nil
}
