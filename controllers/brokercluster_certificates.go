package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	ca, err := r.ensureClusterCA(ctx, c)
	if err != nil {
		return "", err
	}
	peer, err := r.ensureIssued(ctx, c, specs.RaftTLSSecretName(c), "the brokers' Raft certificate", ca, specs.RaftPeerNames(c, founding), certs.IssuePeer)
	if err != nil {
		return "", err
	}
	return specs.ObjectHash(string(peer.Cert)), nil
}

// ensureListenerCertificate keeps, for a cluster with a TLS listener
// without a Secret of the user's, the listeners' certificate issued from
// the cluster's CA, for the cluster's names and the external listeners'
// addresses known so far, and the CA's certificate alone for clients. A
// renewal restarts nothing: the brokers read listener certificates again
// when the mounted Secret changes.
func (r *BrokerClusterReconciler) ensureListenerCertificate(ctx context.Context, c *raftkav1.BrokerCluster, external specs.ExternalAddresses, hostIPs map[int32]string) error {
	if !specs.IssuesListenerCertificate(c) {
		return nil
	}
	ca, err := r.ensureClusterCA(ctx, c)
	if err != nil {
		return err
	}
	var current corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.CACertSecretName(c)}, &current); client.IgnoreNotFound(err) != nil {
		return err
	}
	trustStore, err := certs.EnsureTrustStore(specs.CATrustStore(current.Data), ca.Cert)
	if err != nil {
		return fmt.Errorf("the CA's trust store: %w", err)
	}
	if err := r.apply(ctx, c, specs.BuildCACertSecret(c, ca.Cert, trustStore)); err != nil {
		return err
	}
	_, err = r.ensureIssued(ctx, c, specs.ListenerTLSSecretName(c), "the listeners' certificate", ca, specs.ListenerCertificateNames(c, external, hostIPs), certs.IssueServer)
	return err
}

// ensureIssued keeps in the Secret name a certificate of ca for names
// (with ca.crt beside it), issued again when it nears its end, lost its
// key, or another CA or other names are in play; it returns the
// certificate in service.
func (r *BrokerClusterReconciler) ensureIssued(ctx context.Context, c *raftkav1.BrokerCluster, name, what string, ca certs.Pair, names []string,
	issue func(certs.Pair, []string, time.Time) (certs.Pair, error)) (certs.Pair, error) {
	now := time.Now()
	var current corev1.Secret
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, &current)
	if err != nil && !apierrors.IsNotFound(err) {
		return certs.Pair{}, err
	}
	found := err == nil
	if found && string(current.Data["ca.crt"]) == string(ca.Cert) {
		have := certs.Pair{Cert: current.Data[corev1.TLSCertKey], Key: current.Data[corev1.TLSPrivateKeyKey]}
		ok, why := certs.Usable(have, ca.Cert, names, now)
		if ok {
			return have, nil
		}
		log.FromContext(ctx).Info("renewing a certificate", "certificate", what, "reason", why)
	}
	issued, err := issue(ca, names, now)
	if err != nil {
		return certs.Pair{}, fmt.Errorf("issue %s: %w", what, err)
	}
	data := map[string][]byte{"ca.crt": ca.Cert, corev1.TLSCertKey: issued.Cert, corev1.TLSPrivateKeyKey: issued.Key}
	if found {
		current.Data = data
		err = r.Update(ctx, &current)
	} else {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: specs.Labels(c)},
			Type: corev1.SecretTypeTLS, Data: data}
		if err = controllerutil.SetControllerReference(c, secret, r.Scheme()); err == nil {
			err = r.Create(ctx, secret)
		}
	}
	return issued, err
}

// ensureClusterCA returns the cluster's CA, which signs the brokers' Raft
// certificate and the listeners' certificate the operator issues.
func (r *BrokerClusterReconciler) ensureClusterCA(ctx context.Context, c *raftkav1.BrokerCluster) (certs.Pair, error) {
	return r.ensureCA(ctx, c, specs.CASecretName(c), fmt.Sprintf("%s.%s raftka CA", c.Name, c.Namespace), time.Now())
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
