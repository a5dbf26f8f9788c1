package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UserSpec is a Kafka user of a BrokerCluster: its credential and what it
// may do.
//
// +kubebuilder:validation:XValidation:rule="has(self.userName) == has(oldSelf.userName) && (!has(self.userName) || self.userName == oldSelf.userName)",message="userName is immutable"
type UserSpec struct {
	// ClusterRef names the BrokerCluster the user belongs to.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable"
	ClusterRef ClusterReference `json:"clusterRef"`

	// UserName is the Kafka user name, whose principal is User:<userName>
	// (User:CN=<userName> with tls authentication); metadata.name when
	// unset.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._-]+$`
	UserName string `json:"userName,omitempty"`

	// Authentication is how the user proves who it is.
	Authentication UserAuthentication `json:"authentication"`

	// Authorization is what the user may do, as Kafka ACLs; the cluster
	// enforces them when its spec.authorization is set.
	// +optional
	Authorization *UserAuthorization `json:"authorization,omitempty"`

	// Quotas bound the user's traffic on each broker (Kafka's user
	// quotas); a client over them has its responses throttled.
	// +optional
	Quotas *UserQuotas `json:"quotas,omitempty"`
}

// UserQuotas are a user's byte rates on each broker, shared by all its
// clients.
type UserQuotas struct {
	// ProducerByteRate bounds the bytes/s the user's produce requests
	// carry to each broker.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ProducerByteRate *int64 `json:"producerByteRate,omitempty"`
	// ConsumerByteRate bounds the bytes/s of the user's fetch responses
	// from each broker.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ConsumerByteRate *int64 `json:"consumerByteRate,omitempty"`
}

// UserAuthentication is a user's credential.
type UserAuthentication struct {
	// Type scram-sha-512: the operator generates a password into a Secret
	// named after the User (keys username, password and
	// sasl.jaas.config, for Java clients), and keeps the brokers'
	// credential in step with it. Deleting the Secret makes a new
	// password.
	//
	// Type tls: the operator issues a client certificate for
	// CN=<userName> from the cluster's clients CA into a Secret named
	// after the User (user.crt, user.key, and ca.crt, the clients CA;
	// user.p12, a PKCS#12 key store of them, opened by user.password),
	// renewed a month before it expires, for listeners with tls
	// authentication; the principal is User:CN=<userName>. Deleting the
	// Secret issues a new certificate, but the old one stays valid until
	// it expires: with spec.authorization, the ACLs are what a deleted
	// User loses.
	Type AuthenticationType `json:"type"`
}

// UserAuthorization is a user's ACLs.
type UserAuthorization struct {
	// ACLs of the user, each allowing or denying operations on a
	// resource; the operator adds what is missing on the brokers and
	// removes the user's other ACLs, whoever made them.
	// +kubebuilder:validation:MaxItems=256
	ACLs []ACLRule `json:"acls"`
}

// ACLRule is one Kafka ACL rule of a user.
type ACLRule struct {
	// Resource the rule is about.
	Resource ACLResource `json:"resource"`
	// Operations the rule allows or denies.
	// +kubebuilder:validation:MinItems=1
	Operations []ACLOperation `json:"operations"`
	// Host the rule applies to connections from; any host when unset.
	// +optional
	// +kubebuilder:validation:MinLength=1
	Host string `json:"host,omitempty"`
	// Type is allow (the default) or deny; a deny wins over any allow.
	// +optional
	// +kubebuilder:validation:Enum=allow;deny
	Type ACLRuleType `json:"type,omitempty"`
}

// ACLResource is what an ACL rule is about.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'cluster' ? !has(self.name) && !has(self.patternType) : has(self.name)",message="a cluster resource has no name; the others need one"
type ACLResource struct {
	// Type of the resource.
	// +kubebuilder:validation:Enum=topic;group;cluster;transactionalId
	Type ACLResourceType `json:"type"`
	// Name of the resource, or * for every one of its type.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=249
	Name string `json:"name,omitempty"`
	// PatternType is literal (the default: the name itself, or *) or
	// prefix (every resource whose name starts with it).
	// +optional
	// +kubebuilder:validation:Enum=literal;prefix
	PatternType ACLPatternType `json:"patternType,omitempty"`
}

// ACLResourceType is the type of an ACL's resource.
type ACLResourceType string

// ACLResourceTypes.
const (
	ACLResourceTopic           ACLResourceType = "topic"
	ACLResourceGroup           ACLResourceType = "group"
	ACLResourceCluster         ACLResourceType = "cluster"
	ACLResourceTransactionalID ACLResourceType = "transactionalId"
)

// ACLPatternType is how an ACL's resource name matches.
type ACLPatternType string

// ACLPatternTypes.
const (
	ACLPatternLiteral ACLPatternType = "literal"
	ACLPatternPrefix  ACLPatternType = "prefix"
)

// ACLRuleType allows or denies.
type ACLRuleType string

// ACLRuleTypes.
const (
	ACLAllow ACLRuleType = "allow"
	ACLDeny  ACLRuleType = "deny"
)

// ACLOperation is a Kafka operation, with Kafka's names.
// +kubebuilder:validation:Enum=All;Read;Write;Create;Delete;Alter;Describe;ClusterAction;DescribeConfigs;AlterConfigs;IdempotentWrite
type ACLOperation string

// UserStatus is the observed user.
type UserStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// UserName is the Kafka user this object manages.
	// +optional
	UserName string `json:"userName,omitempty"`
	// Secret holds the user's password or certificate.
	// +optional
	Secret string `json:"secret,omitempty"`
	// ACLs is the number of the user's ACL bindings on the brokers.
	// +optional
	ACLs int32 `json:"acls,omitempty"`
	// Conditions: Ready, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Ready condition reasons of a User, beside the Topic's.
const (
	// ReasonClusterNotSecured: the cluster has no listeners of its own, so
	// no one authenticates, or no authorization to enforce the ACLs.
	ReasonClusterNotSecured = "ClusterNotSecured"
)

// User is a Kafka user of a BrokerCluster: a SCRAM credential and ACLs.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ku,categories=raftka
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="User",type=string,JSONPath=`.status.userName`
// +kubebuilder:printcolumn:name="ACLs",type=integer,JSONPath=`.status.acls`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type User struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UserSpec   `json:"spec,omitempty"`
	Status UserStatus `json:"status,omitempty"`
}

// KafkaName is the Kafka user name.
func (u *User) KafkaName() string {
	if u.Spec.UserName != "" {
		return u.Spec.UserName
	}
	return u.Name
}

// UserList is a list of Users.
//
// +kubebuilder:object:root=true
type UserList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []User `json:"items"`
}

func init() {
	register(&User{}, &UserList{})
}
