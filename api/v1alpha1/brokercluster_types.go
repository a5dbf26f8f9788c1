package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BrokerClusterSpec is the desired broker cluster.
type BrokerClusterSpec struct {
	// Replicas is the number of brokers. Up to three of them vote in the
	// metadata Raft group; the others follow it as observers. A scale-in
	// first moves the replicas off the brokers it removes (see
	// rebalancing), and is refused while fewer brokers would stay than a
	// partition has replicas.
	// +kubebuilder:validation:Minimum=1
	Replicas int32 `json:"replicas"`

	// Image is the broker image; by default the operator's own version of
	// it (the operator's --default-broker-image, which the chart sets).
	// +optional
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image,omitempty"`

	// ImagePullPolicy of the broker containers; IfNotPresent when unset.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// Storage is each broker's persistent volume.
	Storage StorageSpec `json:"storage"`

	// Resources of each broker container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Config holds broker settings, by flag name without the dashes
	// prefix: auto-create-topics, default-partitions,
	// default-replication-factor, min-free-bytes, rtt, log-level,
	// raft-snapshot-entries, raft-log-retain-bytes, raft-log-write-buffer,
	// retention-check-interval, log-cleaner-interval, replica-lag-max,
	// group-initial-rebalance-delay, producer-id-expiration,
	// producer-id-expiration-check-interval, raft-log-max-bytes,
	// controlled-shutdown-timeout, follower-replication-throttled-rate,
	// leader-replication-throttled-rate, max-connections,
	// connections-max-idle, transaction-max-timeout.
	// +optional
	Config map[string]string `json:"config,omitempty"`

	// Rebalancing is Auto (the default) or Off. Auto moves partition
	// replicas with Kafka's reassignment API, a few partitions at a time,
	// until the brokers hold an even share of replicas and preferred
	// leaders (within one of each other, replicas on distinct racks), and
	// off the brokers a lower replicas count removes before the
	// StatefulSet shrinks. Auto also keeps the metadata group's voters at
	// up to 3 of the brokers kept: it adds voters as the cluster grows
	// and removes a leaving broker's vote once it is drained. Off leaves
	// placement and voters to Kafka's tools (kafka-reassign-partitions.sh,
	// kafka-metadata-quorum.sh); a scale-in then waits until the brokers
	// to be removed hold nothing and vote no more.
	// +optional
	// +kubebuilder:validation:Enum=Auto;Off
	Rebalancing RebalancingMode `json:"rebalancing,omitempty"`
	// RackLabel is the pod label each broker's rack (--rack) comes from,
	// and the topology key its pods spread over:
	// topology.kubernetes.io/zone when unset. Kubernetes copies
	// topology.kubernetes.io/zone and topology.kubernetes.io/region from
	// the node onto each pod (the PodTopologyLabels admission, on by
	// default since 1.35); another label must be copied by the platform.
	// Replicas of a partition are placed on distinct racks where there are
	// enough.
	// +optional
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	RackLabel string `json:"rackLabel,omitempty"`
	// PodTemplate adds labels, annotations, node selection, tolerations and
	// a service account to the broker pods.
	// +optional
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`

	// Listeners are where clients reach the brokers, each on a port of its
	// own with its own TLS and authentication, as Kafka's listeners. When
	// empty, the brokers serve one listener without TLS or authentication
	// on 9092, which they also use among themselves. When set, the brokers
	// and the operator use a listener of their own (replication, 9091),
	// on which they authenticate with SCRAM-SHA-512 as users the operator
	// creates (raftka-broker and raftka-operator, super users, their
	// passwords in the Secret <name>-internal-credentials).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(l, self.exists_one(o, o.port == l.port))",message="listeners must have distinct ports"
	Listeners []ListenerSpec `json:"listeners,omitempty"`

	// Authorization, when set, checks every client request against Kafka
	// ACLs: those of the User kind, and those kafka-acls.sh sets. It needs
	// listeners with authentication, so that requests have a principal.
	// +optional
	Authorization *AuthorizationSpec `json:"authorization,omitempty"`

	// NetworkPolicy, when enabled, has the operator write a NetworkPolicy
	// for the broker pods: the brokers' own ports (Raft, which does not
	// authenticate its peers, replication and HTTP, where a broker asks to
	// join the cluster) admit only the cluster's brokers and the operator's
	// pods, the HTTP port also metricsFrom; clients reach the listeners
	// from anywhere. It takes effect where the network plugin enforces
	// NetworkPolicies.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// Tenants admits Topics and Users of other namespaces (whose
	// clusterRef.namespace names this cluster's): those of the namespaces
	// the selector selects. Without it, only objects of the cluster's own
	// namespace use it.
	// +optional
	Tenants *TenantsSpec `json:"tenants,omitempty"`

	// InterBrokerTLS Enabled runs the brokers' Raft transport over mutual
	// TLS and, with listeners of the cluster's own, their replication
	// listener over SASL_SSL, with certificates of the cluster's CA. A
	// cluster created with listeners has both from the start. One created
	// before, or without listeners, moves onto them once this is set: the
	// operator restarts all its brokers at once, as brokers with and
	// without TLS cannot speak to each other, so its partitions are
	// unavailable for that restart (nothing acknowledged is lost). A
	// cluster that gains listeners later, with this set, moves its
	// replication listener the same way. Unsetting it changes nothing:
	// there is no way back.
	// +optional
	// +kubebuilder:validation:Enum=Enabled
	InterBrokerTLS InterBrokerTLS `json:"interBrokerTLS,omitempty"`
}

// InterBrokerTLS is whether the brokers speak to each other over TLS.
type InterBrokerTLS string

// InterBrokerTLSEnabled moves a cluster onto TLS between its brokers.
const InterBrokerTLSEnabled InterBrokerTLS = "Enabled"

// TenantsSpec is which namespaces share a cluster, and how they are kept
// apart.
type TenantsSpec struct {
	// NamespaceSelector selects the tenant namespaces.
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
	// NamePrefix is Namespace (the default): a tenant's Kafka topic and
	// user names start with "<its namespace>.", and its Users' ACLs may
	// name only topics, groups and transactional ids under that prefix
	// (and IdempotentWrite on the cluster), so no tenant reaches another's
	// topics or takes another's user name. None leaves names free.
	// +optional
	// +kubebuilder:validation:Enum=Namespace;None
	NamePrefix TenantNamePrefix `json:"namePrefix,omitempty"`
}

// TenantNamePrefix is the tenants' naming rule.
type TenantNamePrefix string

// TenantNamePrefixes.
const (
	TenantPrefixNamespace TenantNamePrefix = "Namespace"
	TenantPrefixNone      TenantNamePrefix = "None"
)

// NetworkPolicySpec is who may reach a cluster's brokers.
type NetworkPolicySpec struct {
	// Enabled writes the NetworkPolicy; false deletes it.
	Enabled bool `json:"enabled"`
	// MetricsFrom may reach the brokers' HTTP port too, for /metrics
	// (Prometheus's namespace, say).
	// +optional
	MetricsFrom []networkingv1.NetworkPolicyPeer `json:"metricsFrom,omitempty"`
}

// ListenerSpec is one Kafka listener of the brokers.
//
// +kubebuilder:validation:XValidation:rule="!has(self.authentication) || self.authentication.type != 'tls' || has(self.tls)",message="tls authentication needs the listener's tls"
type ListenerSpec struct {
	// Name of the listener; Kafka's tools show it in capitals.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9]{0,10}$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['replication', 'raft', 'http', 'kafka'])",message="replication, raft, http and kafka are the brokers' own port names"
	Name string `json:"name"`
	// Port the brokers listen on, and the client Service serves.
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="!(self in [8080, 9091, 9093])",message="ports 8080, 9091 and 9093 are the brokers' own"
	Port int32 `json:"port"`
	// Type is where clients of the listener are: internal (the default),
	// inside the Kubernetes cluster, through the client Service and the
	// brokers' pod DNS names; nodeport, outside it, through a NodePort
	// Service per broker (each broker advertises its node's address and
	// its Service's node port) and a bootstrap one; loadbalancer, through
	// a LoadBalancer Service per broker (each advertises its load
	// balancer's address, the brokers restarting once it is assigned)
	// and a bootstrap one.
	// +optional
	// +kubebuilder:validation:Enum=internal;nodeport;loadbalancer
	Type ListenerType `json:"type,omitempty"`
	// TLS encrypts the listener with a certificate from a Secret.
	// +optional
	TLS *ListenerTLS `json:"tls,omitempty"`
	// Authentication clients of the listener must pass; none when unset.
	// +optional
	Authentication *ListenerAuthentication `json:"authentication,omitempty"`
}

// ListenerType is where a listener's clients are.
type ListenerType string

// ListenerTypes.
const (
	ListenerInternal     ListenerType = "internal"
	ListenerNodePort     ListenerType = "nodeport"
	ListenerLoadBalancer ListenerType = "loadbalancer"
)

// External tells whether clients outside the Kubernetes cluster use the
// listener.
func (l ListenerSpec) External() bool {
	return l.Type == ListenerNodePort || l.Type == ListenerLoadBalancer
}

// ListenerTLS is a listener's certificate.
type ListenerTLS struct {
	// SecretName is a kubernetes.io/tls Secret in the cluster's namespace
	// (tls.crt and tls.key), as cert-manager writes one. The certificate names the brokers'
	// addresses: <cluster>-<n>.<cluster>-brokers.<namespace>.svc and the
	// client Service <cluster>.<namespace>.svc. A renewed certificate is
	// served to new connections within a second or so of the kubelet
	// updating the mounted Secret, with no restart.
	//
	// An external listener's certificate names the hosts its clients
	// dial: the load balancers' (their ingress IP or hostname), or for a
	// node port the nodes' addresses.
	//
	// Unset, the operator issues the certificate from the cluster's CA
	// into the Secret <cluster>-listener-tls, for those names (an external
	// listener's addresses as they become known: a load balancer's once
	// it has one, a node's once a broker's pod runs there), and issues it
	// again a month before its end or when the names change; clients
	// check it against ca.crt of the Secret <cluster>-ca-cert.
	// +optional
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName,omitempty"`
}

// AuthenticationType is how a listener's clients authenticate.
// +kubebuilder:validation:Enum=scram-sha-512;tls
type AuthenticationType string

// AuthenticationTypes.
const (
	// AuthenticationSCRAMSHA512 is SASL SCRAM-SHA-512 with the passwords
	// of Users (SCRAM-SHA-256 and, over TLS, PLAIN are served too).
	AuthenticationSCRAMSHA512 AuthenticationType = "scram-sha-512"
	// AuthenticationTLS is a client certificate the cluster's clients CA
	// signed (the Secret <cluster>-clients-ca, made by the operator),
	// such as a User's; the principal is User:CN=<name>. The listener
	// needs tls.
	AuthenticationTLS AuthenticationType = "tls"
)

// ListenerAuthentication is how a listener's clients authenticate.
type ListenerAuthentication struct {
	Type AuthenticationType `json:"type"`
}

// AuthorizationSpec turns on Kafka ACLs.
type AuthorizationSpec struct {
	// Type is simple: Kafka's ACLs (StandardAuthorizer's rules).
	// +kubebuilder:validation:Enum=simple
	Type string `json:"type"`
	// SuperUsers may do anything, as User:NAME; the operator's and the
	// brokers' own users always are.
	// +optional
	SuperUsers []string `json:"superUsers,omitempty"`
}

// RebalancingMode says whether the operator spreads partition replicas.
type RebalancingMode string

const (
	RebalancingAuto RebalancingMode = "Auto"
	RebalancingOff  RebalancingMode = "Off"
)

// StorageSpec is a broker's persistent volume claim.
type StorageSpec struct {
	// Size of the volume.
	Size resource.Quantity `json:"size"`
	// StorageClassName of the volume; the cluster default when unset.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// PodTemplate is what users may add to the broker pods.
type PodTemplate struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// ListenerStatus is where clients of a listener connect.
type ListenerStatus struct {
	Name string `json:"name"`
	// BootstrapServers: the client Service of an internal listener; the
	// brokers' advertised addresses of an external one, once known.
	// +optional
	BootstrapServers string `json:"bootstrapServers,omitempty"`
}

// BrokerStatus is one broker as the operator sees it.
type BrokerStatus struct {
	// ID is the broker id, the pod's ordinal.
	ID int32 `json:"id"`
	// Address is the broker's advertised Kafka address.
	Address string `json:"address"`
	// Ready is the pod's readiness, which is the broker's /readyz.
	Ready bool `json:"ready"`
	// Incarnation names the data directory the broker runs on, and
	// Generation counts its incarnations: both change when the broker
	// comes back on an empty volume, whose replicas are then replaced.
	// +optional
	Incarnation string `json:"incarnation,omitempty"`
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// Replicas is the number of partition replicas the broker holds.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// CatchingUp is the number of them not in sync yet.
	// +optional
	CatchingUp int32 `json:"catchingUp,omitempty"`
	// MetadataVoter: the broker votes in the metadata group, whose quorum
	// the operator keeps at up to 3 of the brokers the cluster keeps.
	// +optional
	MetadataVoter bool `json:"metadataVoter,omitempty"`
}

// BrokerClusterStatus is the observed state of a BrokerCluster.
type BrokerClusterStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas is the number of ready brokers.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// BootstrapServers is the client Service's address, at the first
	// listener's port.
	// +optional
	BootstrapServers string `json:"bootstrapServers,omitempty"`
	// Listeners are the client Service's address at each listener.
	// +optional
	Listeners []ListenerStatus `json:"listeners,omitempty"`
	// Brokers lists every broker pod and every broker the cluster has
	// registered.
	// +optional
	Brokers []BrokerStatus `json:"brokers,omitempty"`
	// ReplicationThrottle is the follower replication throttle the
	// operator chose for replicas catching up (a rebalance's moves, a
	// replaced volume), from how much the copies slow the brokers'
	// producers. Absent with spec.rebalancing Off, where spec.config sets
	// follower-replication-throttled-rate, and where the cluster-wide
	// broker config was set by other means: those win.
	// +optional
	ReplicationThrottle *ReplicationThrottleStatus `json:"replicationThrottle,omitempty"`
	// Conditions: Ready, Progressing, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReplicationThrottleStatus is the throttle the operator set.
type ReplicationThrottleStatus struct {
	// BytesPerSecond each broker's catching-up replicas may copy
	// (follower.replication.throttled.rate for every broker).
	BytesPerSecond int64 `json:"bytesPerSecond"`
	// Reason is why it is at that rate.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// BrokerCluster is a Raftka broker cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rbc,categories=raftka
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Bootstrap",type=string,JSONPath=`.status.bootstrapServers`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BrokerCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BrokerClusterSpec   `json:"spec,omitempty"`
	Status BrokerClusterStatus `json:"status,omitempty"`
}

// BrokerClusterList is a list of BrokerClusters.
//
// +kubebuilder:object:root=true
type BrokerClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BrokerCluster `json:"items"`
}

func init() {
	register(&BrokerCluster{}, &BrokerClusterList{})
}
