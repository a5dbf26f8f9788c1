package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
	"github.com/raftka/raftka/internal/brokerclient"
	"github.com/raftka/raftka/internal/certs"
	"github.com/raftka/raftka/internal/specs"
	"github.com/raftka/raftka/internal/tenancy"
)

// UserFinalizer holds a User until its credential and ACLs left the
// brokers.
const UserFinalizer = "raftka.io/user"

// UserReconciler keeps the brokers' SCRAM credentials, ACLs and quotas,
// and the Users' passwords and certificates, in step with User objects.
type UserReconciler struct {
	client.Client
	Brokers *brokerclient.Clients
	// Secrets keeps the Secrets the brokers are reached with; shared by
	// the controllers (Setup).
	Secrets *SecretCache
	// Resync is how often a Ready user is compared with the brokers again:
	// a password or an ACL changed there is set back.
	Resync time.Duration
}

// +kubebuilder:rbac:groups=raftka.io,resources=users,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=raftka.io,resources=users/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=raftka.io,resources=users/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;patch;delete

// Reconcile runs the steps for one User.
func (r *UserReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var user raftkav1.User
	if err := r.Get(ctx, req.NamespacedName, &user); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := user.DeepCopy()
	result, err := r.reconcile(ctx, &user)
	user.Status.ObservedGeneration = user.Generation
	user.Status.UserName = user.KafkaName()
	if user.DeletionTimestamp.IsZero() {
		if uerr := patchStatus(ctx, r.Client, &user, before, user.Status, before.Status); uerr != nil {
			return ctrl.Result{}, uerr
		}
	}
	return result, err
}

func (r *UserReconciler) reconcile(ctx context.Context, user *raftkav1.User) (ctrl.Result, error) {
	if !user.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, user)
	}
	if reservedUser(user) {
		// Before the finalizer: such a User never touches the brokers.
		err := fmt.Errorf("user name %s is the cluster's own", user.KafkaName())
		r.notReady(user, raftkav1.ReasonNotSupported, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if controllerutil.AddFinalizer(user, UserFinalizer) {
		if err := r.Update(ctx, user); err != nil {
			return ctrl.Result{}, err
		}
	}
	want, err := specs.UserACLs(user)
	if err != nil {
		r.notReady(user, raftkav1.ReasonNotSupported, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	// Admission first: a User its cluster does not admit never touches the
	// brokers, nor competes for a name, or one tenant could take or revoke
	// another's user.
	cluster, access, err := r.cluster(ctx, user)
	if errors.As(err, new(errNotAdmitted)) {
		if rerr := r.revokeFormerTenant(ctx, user); rerr != nil {
			return ctrl.Result{}, rerr
		}
		r.notReady(user, raftkav1.ReasonNotAdmitted, err.Error())
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	if winner, oerr := r.owner(ctx, user); oerr != nil {
		return ctrl.Result{}, oerr
	} else if winner != client.ObjectKeyFromObject(user) {
		r.notReady(user, raftkav1.ReasonResourceConflict, fmt.Sprintf("User %s already manages Kafka user %s on this cluster", winner, user.KafkaName()))
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	if err != nil {
		r.notReady(user, raftkav1.ReasonClusterNotReady, err.Error())
		return ctrl.Result{}, fmt.Errorf("cluster for user %s: %w", user.Name, err)
	}
	if !specs.Secured(cluster) {
		r.notReady(user, raftkav1.ReasonClusterNotSecured, fmt.Sprintf("BrokerCluster %s has no spec.listeners: its brokers authenticate no one", cluster.Name))
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	if specs.TLSUser(user) && !specs.AuthenticatesCertificates(cluster) {
		r.notReady(user, raftkav1.ReasonClusterNotSecured, fmt.Sprintf("BrokerCluster %s has no listener with tls authentication: no broker would take the user's certificate", cluster.Name))
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	bctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := r.ensureAuthentication(ctx, bctx, user, cluster, access); err != nil {
		switch {
		case errors.As(err, new(errSecretTaken)):
			r.notReady(user, raftkav1.ReasonResourceConflict, err.Error())
			return ctrl.Result{RequeueAfter: r.Resync}, nil
		case errors.As(err, new(errClientsCA)):
			r.notReady(user, raftkav1.ReasonClusterNotReady, err.Error())
		default:
			r.notReady(user, raftkav1.ReasonBrokerError, err.Error())
		}
		return ctrl.Result{}, err
	}
	user.Status.Secret = specs.UserSecretName(user)
	if cluster.Spec.Authorization == nil {
		if len(want) > 0 {
			r.notReady(user, raftkav1.ReasonClusterNotSecured, fmt.Sprintf("BrokerCluster %s has no spec.authorization: the user's ACLs would not be enforced", cluster.Name))
			return ctrl.Result{RequeueAfter: r.Resync}, nil
		}
	} else if err := r.ensureACLs(bctx, user, access, want); err != nil {
		r.notReady(user, raftkav1.ReasonBrokerError, err.Error())
		return ctrl.Result{}, err
	}
	if err := r.ensureQuotas(bctx, user, access, specs.UserQuotas(user)); err != nil {
		r.notReady(user, raftkav1.ReasonBrokerError, err.Error())
		return ctrl.Result{}, err
	}
	user.Status.ACLs = int32(len(want))
	setCondition(&user.Status.Conditions, user.Generation, raftkav1.ConditionReady, true, "InSync",
		fmt.Sprintf("the brokers hold the credential of %s and its %d ACL bindings", user.KafkaName(), len(want)))
	meta.RemoveStatusCondition(&user.Status.Conditions, raftkav1.ConditionStalled)
	return ctrl.Result{RequeueAfter: r.Resync}, nil
}

// reservedUser: the brokers set the credentials of their own and the
// operator's users from the internal credentials; a User of either name
// would fight them for the password, and its deletion would revoke the
// operator's access.
func reservedUser(user *raftkav1.User) bool {
	return user.KafkaName() == specs.BrokerUser || user.KafkaName() == specs.OperatorUser
}

func (r *UserReconciler) notReady(user *raftkav1.User, reason, message string) {
	setCondition(&user.Status.Conditions, user.Generation, raftkav1.ConditionReady, false, reason, message)
	// Only a change of the User (or of its cluster's spec) heals these.
	stalled := reason == raftkav1.ReasonNotSupported || reason == raftkav1.ReasonResourceConflict || reason == raftkav1.ReasonClusterNotSecured ||
		reason == raftkav1.ReasonNotAdmitted
	setCondition(&user.Status.Conditions, user.Generation, raftkav1.ConditionStalled, stalled, reason, message)
}

// owner returns the User that manages this Kafka user: of all Users
// naming it on the same cluster, in any namespace, the oldest.
func (r *UserReconciler) owner(ctx context.Context, user *raftkav1.User) (types.NamespacedName, error) {
	var all raftkav1.UserList
	if err := r.List(ctx, &all); err != nil {
		return types.NamespacedName{}, err
	}
	var same []client.Object
	for i, u := range all.Items {
		if sameCluster(u.Namespace, u.Spec.ClusterRef, user.Namespace, user.Spec.ClusterRef) && u.KafkaName() == user.KafkaName() && u.DeletionTimestamp.IsZero() {
			if _, _, err := r.cluster(ctx, &all.Items[i]); errors.As(err, new(errNotAdmitted)) {
				continue
			}
			same = append(same, &all.Items[i])
		}
	}
	return oldest(same, client.ObjectKeyFromObject(user)), nil
}

// cluster is the User's BrokerCluster and how to reach its brokers; an
// errNotAdmitted when the User's namespace or names may not use it.
func (r *UserReconciler) cluster(ctx context.Context, user *raftkav1.User) (*raftkav1.BrokerCluster, brokerclient.Access, error) {
	cluster, err := tenantCluster(ctx, r.Client, user.Namespace, user.Spec.ClusterRef)
	if err != nil {
		return nil, brokerclient.Access{}, err
	}
	if err := tenancy.CheckUser(cluster, user.Namespace, user); err != nil {
		return nil, brokerclient.Access{}, errNotAdmitted{err}
	}
	if !specs.Secured(cluster) {
		return cluster, brokerclient.Access{}, nil
	}
	access, err := clusterAccess(ctx, r.Client, r.Brokers, r.Secrets, cluster)
	return cluster, access, err
}

// errSecretTaken: a Secret of the User's name exists that is not the
// User's; the operator does not overwrite it.
type errSecretTaken struct{ name string }

func (e errSecretTaken) Error() string {
	return fmt.Sprintf("Secret %s exists and is not this User's: rename one of them", e.name)
}

// ensureAuthentication keeps the user's Secret and the brokers in step
// with its authentication: a password and its SCRAM credential, or a
// certificate and no SCRAM credential, so that a user moved to
// certificates no longer logs in with its old password. ctx is for the
// API server, bctx for the brokers.
func (r *UserReconciler) ensureAuthentication(ctx, bctx context.Context, user *raftkav1.User, cluster *raftkav1.BrokerCluster, access brokerclient.Access) error {
	if specs.TLSUser(user) {
		if err := r.ensureCertificate(ctx, user, cluster); err != nil {
			return err
		}
		if err := r.Brokers.DeleteSCRAM(bctx, access, user.KafkaName()); err != nil {
			return fmt.Errorf("delete the SCRAM credential of %s: %w", user.KafkaName(), err)
		}
		return nil
	}
	data, err := r.ensureSecret(ctx, user, func(current map[string][]byte) (*corev1.Secret, error) {
		password := string(current[specs.UserSecretPassword])
		if password == "" {
			password = newPassword()
		}
		return specs.BuildUserSecret(user, password), nil
	})
	if err != nil {
		return err
	}
	return r.ensureCredential(bctx, user, access, string(data[specs.UserSecretPassword]))
}

// errClientsCA: the cluster's clients CA, which signs tls Users'
// certificates, cannot be read (the BrokerCluster's controller makes it).
type errClientsCA struct{ err error }

func (e errClientsCA) Error() string { return "the cluster's clients CA: " + e.err.Error() }
func (e errClientsCA) Unwrap() error { return e.err }

// ensureCertificate keeps a tls User's certificate in its Secret, issued
// from the cluster's clients CA, and issues it again when it nears its
// end, lost its key, or another CA or name is in play.
func (r *UserReconciler) ensureCertificate(ctx context.Context, user *raftkav1.User, cluster *raftkav1.BrokerCluster) error {
	var caSecret corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: cluster.Namespace, Name: specs.ClientsCASecretName(cluster)}, &caSecret); err != nil {
		return errClientsCA{err}
	}
	ca := certs.Pair{Cert: caSecret.Data[corev1.TLSCertKey], Key: caSecret.Data[corev1.TLSPrivateKeyKey]}
	_, err := r.ensureSecret(ctx, user, func(current map[string][]byte) (*corev1.Secret, error) {
		now := time.Now()
		have := certs.Pair{Cert: current[specs.UserSecretCertificate], Key: current[specs.UserSecretKey]}
		if current != nil {
			ok, why := certs.UsableClient(have, ca.Cert, user.KafkaName(), now)
			if ok {
				return userCertificateSecret(user, have, ca.Cert, current)
			}
			log.FromContext(ctx).Info("issuing the user's certificate", "user", user.KafkaName(), "reason", why)
		}
		issued, err := certs.IssueClient(ca, user.KafkaName(), now)
		if err != nil {
			return nil, errClientsCA{err}
		}
		return userCertificateSecret(user, issued, ca.Cert, current)
	})
	return err
}

// userCertificateSecret is a tls User's Secret for cert, its key store
// kept from current where it holds cert.
func userCertificateSecret(user *raftkav1.User, cert certs.Pair, clientsCA []byte, current map[string][]byte) (*corev1.Secret, error) {
	keyStore, err := certs.EnsureKeyStore(specs.UserKeyStore(current), cert, clientsCA)
	if err != nil {
		return nil, fmt.Errorf("the user's key store: %w", err)
	}
	return specs.BuildUserCertificateSecret(user, cert, clientsCA, keyStore), nil
}

// ensureSecret makes the User's Secret the one desired builds from its
// current data (nil when there is no Secret: the first time, or once it
// was deleted) and returns the data it holds.
func (r *UserReconciler) ensureSecret(ctx context.Context, user *raftkav1.User, desired func(current map[string][]byte) (*corev1.Secret, error)) (map[string][]byte, error) {
	var current corev1.Secret
	err := r.Get(ctx, types.NamespacedName{Namespace: user.Namespace, Name: specs.UserSecretName(user)}, &current)
	if apierrors.IsNotFound(err) {
		secret, err := desired(nil)
		if err != nil {
			return nil, err
		}
		if err := controllerutil.SetControllerReference(user, secret, r.Scheme()); err != nil {
			return nil, err
		}
		if err := r.Create(ctx, secret); err != nil {
			return nil, err
		}
		log.FromContext(ctx).Info("user secret made", "user", user.KafkaName(), "secret", secret.Name)
		return secret.Data, nil
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(&current, user) {
		return nil, errSecretTaken{current.Name}
	}
	want, err := desired(current.Data)
	if err != nil {
		return nil, err
	}
	if maps.EqualFunc(current.Data, want.Data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return current.Data, nil
	}
	current.Data = want.Data
	return want.Data, r.Update(ctx, &current)
}

// ensureCredential logs in as the user and, if the password is refused,
// sets the credential from it: a credential missing, or changed on the
// brokers, is set back.
func (r *UserReconciler) ensureCredential(ctx context.Context, user *raftkav1.User, access brokerclient.Access, password string) error {
	ok, err := brokerclient.Authenticates(ctx, access, user.KafkaName(), password)
	if err != nil || ok {
		return err
	}
	if err := r.Brokers.SetSCRAM(ctx, access, user.KafkaName(), password); err != nil {
		return fmt.Errorf("set the SCRAM credential of %s: %w", user.KafkaName(), err)
	}
	log.FromContext(ctx).Info("user credential set", "user", user.KafkaName())
	return nil
}

// ensureACLs makes the user's ACL bindings on the brokers those of its
// spec, whoever added or removed some; those of the principal of its
// other authentication go.
func (r *UserReconciler) ensureACLs(ctx context.Context, user *raftkav1.User, access brokerclient.Access, want []brokerclient.ACL) error {
	var have []brokerclient.ACL
	for _, name := range specs.PrincipalNames(user) {
		acls, err := r.Brokers.ACLsOf(ctx, access, "User:"+name)
		if err != nil {
			return fmt.Errorf("describe the ACLs of %s: %w", user.KafkaName(), err)
		}
		have = append(have, acls...)
	}
	create, remove := brokerclient.DiffACLs(want, have)
	if err := r.Brokers.CreateACLs(ctx, access, create); err != nil {
		return fmt.Errorf("create ACLs of %s: %w", user.KafkaName(), err)
	}
	if err := r.Brokers.DeleteACLs(ctx, access, remove); err != nil {
		return fmt.Errorf("delete ACLs of %s: %w", user.KafkaName(), err)
	}
	if len(create)+len(remove) > 0 {
		log.FromContext(ctx).Info("user ACLs changed", "user", user.KafkaName(), "created", len(create), "deleted", len(remove))
	}
	return nil
}

// ensureQuotas makes the user's quota values on the brokers those of its
// spec; its principal's name is their user entity, and the name of its
// other authentication keeps none.
func (r *UserReconciler) ensureQuotas(ctx context.Context, user *raftkav1.User, access brokerclient.Access, want map[string]float64) error {
	for i, name := range specs.PrincipalNames(user) {
		if i > 0 {
			want = nil
		}
		have, err := r.Brokers.UserQuotas(ctx, access, name)
		if err != nil {
			return fmt.Errorf("describe the quotas of %s: %w", name, err)
		}
		changed, err := r.Brokers.SetUserQuotas(ctx, access, name, want, have)
		if err != nil {
			return fmt.Errorf("set the quotas of %s: %w", name, err)
		}
		if changed {
			log.FromContext(ctx).Info("user quotas changed", "user", name, "quotas", fmt.Sprint(want))
		}
	}
	return nil
}

// finalize removes the user's credential, ACLs and quotas from the
// brokers, unless another User manages the same Kafka user or the cluster
// does not admit this one; the Secret goes with the User (owner
// reference).
func (r *UserReconciler) finalize(ctx context.Context, user *raftkav1.User) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(user, UserFinalizer) {
		return ctrl.Result{}, nil
	}
	winner, err := r.owner(ctx, user)
	if err != nil {
		return ctrl.Result{}, err
	}
	if winner == client.ObjectKeyFromObject(user) && !reservedUser(user) {
		cluster, access, err := r.cluster(ctx, user)
		switch {
		case errors.Is(err, errClusterMissing), errors.As(err, new(errNotAdmitted)):
		case err != nil:
			return ctrl.Result{}, err
		default:
			if err := r.removeFromBrokers(ctx, user, cluster, access); err != nil {
				return ctrl.Result{}, err
			}
			log.FromContext(ctx).Info("user removed from the brokers", "user", user.KafkaName())
		}
	}
	controllerutil.RemoveFinalizer(user, UserFinalizer)
	return ctrl.Result{}, r.Update(ctx, user)
}

// revokeFormerTenant removes from the brokers the user of a tenant its
// cluster no longer admits, so that a namespace dropped from spec.tenants
// keeps no access. Only a name under the namespace's own prefix, which no
// other tenant could take, and which no admitted User manages, is
// removed: a User that is not admitted must not revoke anyone else's.
func (r *UserReconciler) revokeFormerTenant(ctx context.Context, user *raftkav1.User) error {
	cns, name := user.Spec.ClusterRef.ClusterKey(user.Namespace)
	if cns == user.Namespace || !strings.HasPrefix(user.KafkaName(), user.Namespace+".") || reservedUser(user) {
		return nil
	}
	var cluster raftkav1.BrokerCluster
	if err := r.Get(ctx, types.NamespacedName{Namespace: cns, Name: name}, &cluster); err != nil {
		return client.IgnoreNotFound(err)
	}
	if t := cluster.Spec.Tenants; t != nil && t.NamePrefix == raftkav1.TenantPrefixNone || !specs.Secured(&cluster) {
		return nil
	}
	if winner, err := r.owner(ctx, user); err != nil || winner != client.ObjectKeyFromObject(user) {
		return err
	}
	access, err := clusterAccess(ctx, r.Client, r.Brokers, r.Secrets, &cluster)
	if err != nil {
		return err
	}
	return r.removeFromBrokers(ctx, user, &cluster, access)
}

// removeFromBrokers deletes the user's credential, ACLs and quotas from a
// secured cluster's brokers.
func (r *UserReconciler) removeFromBrokers(ctx context.Context, user *raftkav1.User, cluster *raftkav1.BrokerCluster, access brokerclient.Access) error {
	if !specs.Secured(cluster) {
		return nil
	}
	bctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := r.Brokers.DeleteSCRAM(bctx, access, user.KafkaName()); err != nil {
		return fmt.Errorf("delete the credential of %s: %w", user.KafkaName(), err)
	}
	if cluster.Spec.Authorization != nil {
		if err := r.ensureACLs(bctx, user, access, nil); err != nil {
			return err
		}
	}
	return r.ensureQuotas(bctx, user, access, nil)
}

// SetupWithManager registers the controller: Users, and the Users of a
// BrokerCluster when it appears, goes or its spec changes (a User reads
// no cluster status). Their Secrets are not watched (Secrets are not
// cached); a deleted one is made again at the next resync. Users are
// independent of each other, and each waits on broker round trips: four
// at once.
func (r *UserReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&raftkav1.User{}).
		Watches(&raftkav1.BrokerCluster{}, handler.EnqueueRequestsFromMapFunc(r.usersOfCluster), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Named("user").
		Complete(r)
}

func (r *UserReconciler) usersOfCluster(ctx context.Context, obj client.Object) []ctrl.Request {
	var users raftkav1.UserList
	if err := r.List(ctx, &users); err != nil {
		return nil
	}
	var reqs []ctrl.Request
	for _, u := range users.Items {
		if ns, name := u.Spec.ClusterRef.ClusterKey(u.Namespace); ns == obj.GetNamespace() && name == obj.GetName() {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: u.Namespace, Name: u.Name}})
		}
	}
	return reqs
}
