package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/certs"
	"github.com/raftka/raftka/internal/specs"
)

// ensureRaftCertificate keeps, for a cluster founded with a mutual TLS
// Raft transport, a CA of the cluster's own and the brokers' certificate
// it signed, issued again when it nears its end, lost its key, or names
// other hosts. It returns a hash of the certificate in service, which the
// brokers' pod template carries, so that a renewal restarts them.
func (r *BrokerClusterReconciler) ensureRaftCertificate(ctx context.Context, c *raftkav1.BrokerCluster, founding specs.Founding) (string, error) {
	if !founding.RaftTLS {
		return "", nil
	}
	now := time.Now()
	ca, err := r.ensureCA(ctx, c, specs.CASecretName(c), fmt.Sprintf("%s.%s raftka CA", c.Name, c.Namespace), now)
	if err != nil {
		return "", err
	}
	var current corev1.Secret
	err = r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.RaftTLSSecretName(c)}, &current)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	found := err == nil
	if found && string(current.Data["ca.crt"]) == string(ca.Cert) {
		peer := certs.Pair{Cert: current.Data[corev1.TLSCertKey], Key: current.Data[corev1.TLSPrivateKeyKey]}
		ok, why := certs.Usable(peer, ca.Cert, specs.RaftPeerNames(c), now)
		if ok {
			return specs.ObjectHash(string(peer.Cert)), nil
		}
		log.FromContext(ctx).Info("renewing the brokers' Raft certificate", "reason", why)
	}
	peer, err := certs.IssuePeer(ca, specs.RaftPeerNames(c), now)
	if err != nil {
		return "", fmt.Errorf("issue the brokers' Raft certificate: %w", err)
	}
	data := map[string][]byte{"ca.crt": ca.Cert, corev1.TLSCertKey: peer.Cert, corev1.TLSPrivateKeyKey: peer.Key}
	if found {
		current.Data = data
		err = r.Update(ctx, &current)
	} else {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: specs.RaftTLSSecretName(c), Namespace: c.Namespace, Labels: specs.Labels(c)},
			Type: corev1.SecretTypeTLS, Data: data}
		if err = controllerutil.SetControllerReference(c, secret, r.Scheme()); err == nil {
			err = r.Create(ctx, secret)
		}
	}
	if err != nil {
		return "", err
	}
	return specs.ObjectHash(string(peer.Cert)), nil
}

// ensureClientsCA makes, for a cluster with a listener that authenticates
// client certificates, the CA that signs them (its certificate is the
// listener's ca.crt); before the brokers' pods, which mount it.
func (r *BrokerClusterReconciler) ensureClientsCA(ctx context.Context, c *raftkav1.BrokerCluster) error {
	if !specs.AuthenticatesCertificates(c) {
		return nil
	}
	_, err := r.ensureCA(ctx, c, specs.ClientsCASecretName(c), fmt.Sprintf("%s.%s raftka clients CA", c.Name, c.Namespace), time.Now())
	return err
}

// ensureCA returns the CA of the Secret name, making it the first time.
// It is never replaced: every certificate the brokers trust comes from
// it.
func (r *BrokerClusterReconciler) ensureCA(ctx context.Context, c *raftkav1.BrokerCluster, name, commonName string, now time.Time) (certs.Pair, error) {
	var secret corev1.Secret
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, &secret)
	if err == nil {
		return certs.Pair{Cert: secret.Data[corev1.TLSCertKey], Key: secret.Data[corev1.TLSPrivateKeyKey]}, nil
	}
	if !apierrors.IsNotFound(err) {
		return certs.Pair{}, err
	}
	ca, err := certs.NewCA(commonName, now)
	if err != nil {
		return certs.Pair{}, err
	}
	secret = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: specs.Labels(c)},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: ca.Cert, corev1.TLSPrivateKeyKey: ca.Key}}
	if err := controllerutil.SetControllerReference(c, &secret, r.Scheme()); err != nil {
		return certs.Pair{}, err
	}
	if err := r.Create(ctx, &secret); err != nil {
		return certs.Pair{}, err
	}
	log.FromContext(ctx).Info("CA made", "secret", secret.Name)
	return ca, nil
}
