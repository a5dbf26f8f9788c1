package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

// Ports every broker listens on.
const (
	KafkaPort = 9092
	RaftPort  = 9093
	HTTPPort  = 8080
	// MaxMetadataVoters is the size of the metadata Raft group.
	MaxMetadataVoters = 3
	dataPath          = "/var/lib/raftka"
)

// Label keys on everything a BrokerCluster owns.
const (
	LabelName = "app.kubernetes.io/name"
	// LabelCluster names the BrokerCluster. app.kubernetes.io/instance is
	// left to GitOps tools, which track their applications by it: the
	// brokers' volume claims carry these labels and have no owner, and
	// must not look like part of someone's application.
	LabelCluster   = "raftka.io/cluster"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// AnnotationVoters records, on the ConfigMap, how many brokers form the
	// metadata Raft group. It is fixed when the cluster is first created:
	// Raft membership does not follow later changes of spec.replicas.
	AnnotationVoters = "raftka.io/metadata-voters"
	// AnnotationConfigHash on the pod template rolls the brokers when
	// their configuration changes.
	AnnotationConfigHash = "raftka.io/config-hash"
)

// Names of a cluster's objects.
func HeadlessServiceName(c *raftkav1.BrokerCluster) string { return c.Name + "-brokers" }
func ClientServiceName(c *raftkav1.BrokerCluster) string   { return c.Name }
func ConfigMapName(c *raftkav1.BrokerCluster) string       { return c.Name + "-config" }
func StatefulSetName(c *raftkav1.BrokerCluster) string     { return c.Name }

// DefaultFollowerThrottledRate bounds, in bytes per second, what each
// broker of a BrokerCluster copies for replicas catching up (a rebalance's
// moves, a replaced volume) unless spec.config sets
// follower-replication-throttled-rate: the broker alone, like Kafka, has
// no bound, but the operator moves replicas on its own. It is the brokers'
// flag, in force until the operator sets the rate it chooses for every
// broker at run time (throttle.DefaultPolicy starts from the same rate).
const DefaultFollowerThrottledRate = 20 << 20

// DefaultRackLabel is the pod label brokers take their rack from unless
// the spec names another.
const DefaultRackLabel = "topology.kubernetes.io/zone"

// RackLabel is the pod label a cluster's brokers take their rack from.
func RackLabel(c *raftkav1.BrokerCluster) string {
	if c.Spec.RackLabel != "" {
		return c.Spec.RackLabel
	}
	return DefaultRackLabel
}
func PDBName(c *raftkav1.BrokerCluster) string { return c.Name }

// Labels selects a cluster's brokers.
func Labels(c *raftkav1.BrokerCluster) map[string]string {
	return map[string]string{LabelName: "raftka", LabelCluster: c.Name, LabelComponent: "broker", LabelManagedBy: "raftka-operator"}
}

// BootstrapServers is the client Service's address at the first client
// listener.
func BootstrapServers(c *raftkav1.BrokerCluster) string {
	return fmt.Sprintf("%s.%s.svc:%d", ClientServiceName(c), c.Namespace, clientPort(c))
}

// BrokerHost is broker id's stable DNS name through the headless Service.
func BrokerHost(c *raftkav1.BrokerCluster, id int32) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc", StatefulSetName(c), id, HeadlessServiceName(c), c.Namespace)
}

// BrokerImage is the image the brokers run: spec.image, else the
// operator's default; an error when neither names one.
func BrokerImage(c *raftkav1.BrokerCluster, fallback string) (string, error) {
	switch {
	case c.Spec.Image != "":
		return c.Spec.Image, nil
	case fallback != "":
		return fallback, nil
	}
	return "", fmt.Errorf("spec.image is empty and the operator has no default broker image (--default-broker-image): name the broker image")
}

// InitialVoters is the metadata group size for a new cluster.
func InitialVoters(c *raftkav1.BrokerCluster) int32 {
	return min(c.Spec.Replicas, MaxMetadataVoters)
}

// brokerFlags maps spec.config keys to the broker's environment variables.
var brokerFlags = map[string]bool{
	"auto-create-topics": true, "default-partitions": true, "default-replication-factor": true,
	"min-free-bytes": true, "rtt": true, "log-level": true, "raft-snapshot-entries": true,
	"retention-check-interval": true, "group-initial-rebalance-delay": true, "raft-log-write-buffer": true,
	"raft-log-retain-bytes": true, "log-cleaner-interval": true, "replica-lag-max": true,
	"producer-id-expiration": true, "producer-id-expiration-check-interval": true, "raft-log-max-bytes": true,
	"controlled-shutdown-timeout": true, "follower-replication-throttled-rate": true, "leader-replication-throttled-rate": true,
	"max-connections": true, "connections-max-idle": true, "transaction-max-timeout": true,
}

// ValidateConfig rejects spec.config keys the broker does not know.
func ValidateConfig(c *raftkav1.BrokerCluster) error {
	var unknown []string
	for k := range c.Spec.Config {
		if !brokerFlags[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		return fmt.Errorf("unknown broker config %s", strings.Join(unknown, ", "))
	}
	return nil
}

// Founding is what a cluster's creation fixed, which the ConfigMap
// records: how many brokers founded the metadata group, and whether the
// Raft transport is mutual TLS (brokers of the one cannot speak to those
// of the other, so a running cluster cannot switch).
type Founding struct {
	Voters  int32
	RaftTLS bool
	// ReplicationTLS: the replication listener is SASL_SSL and serves the
	// brokers' Raft certificate. A broker dialing TLS cannot fetch from
	// one serving plain text, nor the other way round, so a running
	// cluster does not switch in a roll; clusters created before it was
	// built keep SASL_PLAINTEXT.
	ReplicationTLS bool
}

// AnnotationRaftTLS records, on the ConfigMap, that the cluster's Raft
// transport is mutual TLS: a cluster created with listeners of its own.
const AnnotationRaftTLS = "raftka.io/raft-tls"

// AnnotationReplicationTLS records, on the ConfigMap, that the cluster's
// replication listener is SASL_SSL.
const AnnotationReplicationTLS = "raftka.io/replication-tls"

// NewFounding is what a cluster created now founds with.
func NewFounding(c *raftkav1.BrokerCluster) Founding {
	return withInterBrokerTLS(c, Founding{Voters: InitialVoters(c), RaftTLS: Secured(c), ReplicationTLS: Secured(c)})
}

// FoundingOf reads what a cluster's ConfigMap recorded of its creation,
// and of a move onto TLS since (spec.interBrokerTLS).
func FoundingOf(c *raftkav1.BrokerCluster, cm *corev1.ConfigMap) Founding {
	raftTLS := cm.Annotations[AnnotationRaftTLS] == "true"
	f := Founding{Voters: InitialVoters(c), RaftTLS: raftTLS, ReplicationTLS: raftTLS && cm.Annotations[AnnotationReplicationTLS] == "true"}
	if n, err := strconv.Atoi(cm.Annotations[AnnotationVoters]); err == nil && n > 0 {
		f.Voters = int32(n)
	}
	return withInterBrokerTLS(c, f)
}

// withInterBrokerTLS turns on what spec.interBrokerTLS asks for; nothing
// turns it off.
func withInterBrokerTLS(c *raftkav1.BrokerCluster, f Founding) Founding {
	if c.Spec.InterBrokerTLS == raftkav1.InterBrokerTLSEnabled {
		f.RaftTLS = true
		f.ReplicationTLS = f.ReplicationTLS || Secured(c)
	}
	return f
}

// Transport is how brokers speak to each other: the Raft transport over
// mutual TLS or not, the replication listener over SASL_SSL or not.
// Brokers of different transports cannot form a cluster.
type Transport struct{ RaftTLS, ReplicationTLS bool }

// Transport is the transport the cluster's brokers are to run.
func (f Founding) Transport() Transport {
	return Transport{RaftTLS: f.RaftTLS, ReplicationTLS: f.ReplicationTLS}
}

func (t Transport) String() string {
	return fmt.Sprintf("raft-tls=%t,replication-tls=%t", t.RaftTLS, t.ReplicationTLS)
}

// The flags that tell a broker's transport: the Raft transport's CA
// (raftTLSArgs) and the one the brokers trust on the replication
// listener (listenerArgs).
const (
	raftTLSCAFlag     = "--raft-tls-ca-file="
	interBrokerCAFlag = "--inter-broker-ssl-ca-file="
)

// PodTransport is the transport a broker pod runs, read from its flags,
// so that pods of any operator version tell it.
func PodTransport(p *corev1.Pod) Transport {
	var t Transport
	for _, c := range p.Spec.Containers {
		for _, a := range c.Args {
			t.RaftTLS = t.RaftTLS || strings.HasPrefix(a, raftTLSCAFlag)
			t.ReplicationTLS = t.ReplicationTLS || strings.HasPrefix(a, interBrokerCAFlag)
		}
	}
	return t
}

// BuildConfigMap holds the broker settings as RAFTKA_* environment
// variables, and what the cluster's creation fixed.
func BuildConfigMap(c *raftkav1.BrokerCluster, founding Founding) *corev1.ConfigMap {
	data := map[string]string{"RAFTKA_LOG_FORMAT": "json"}
	if _, set := c.Spec.Config["default-replication-factor"]; !set {
		data["RAFTKA_DEFAULT_REPLICATION_FACTOR"] = strconv.Itoa(int(min(c.Spec.Replicas, 3)))
	}
	if _, set := c.Spec.Config["follower-replication-throttled-rate"]; !set {
		data["RAFTKA_FOLLOWER_REPLICATION_THROTTLED_RATE"] = strconv.Itoa(DefaultFollowerThrottledRate)
	}
	for k, v := range c.Spec.Config {
		data["RAFTKA_"+strings.ToUpper(strings.ReplaceAll(k, "-", "_"))] = v
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName(c), Namespace: c.Namespace, Labels: Labels(c),
			Annotations: map[string]string{AnnotationVoters: strconv.Itoa(int(founding.Voters)), AnnotationRaftTLS: strconv.FormatBool(founding.RaftTLS),
				AnnotationReplicationTLS: strconv.FormatBool(founding.ReplicationTLS)}},
		Data: data,
	}
}

// BuildHeadlessService gives every broker a stable DNS name, published
// before the broker is ready: brokers need each other's addresses to form
// the Raft groups that readiness waits for.
func BuildHeadlessService(c *raftkav1.BrokerCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: HeadlessServiceName(c), Namespace: c.Namespace, Labels: Labels(c)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: Labels(c),
			Ports: append(listenerPorts(c, false),
				corev1.ServicePort{Name: "raft", Port: RaftPort, TargetPort: intstr.FromString("raft")},
				corev1.ServicePort{Name: "http", Port: HTTPPort, TargetPort: intstr.FromString("http")},
			),
		},
	}
}

// BuildClientService is the bootstrap address for clients.
func BuildClientService(c *raftkav1.BrokerCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ClientServiceName(c), Namespace: c.Namespace, Labels: Labels(c)},
		Spec: corev1.ServiceSpec{
			Selector: Labels(c),
			Ports: append(listenerPorts(c, true),
				corev1.ServicePort{Name: "http", Port: HTTPPort, TargetPort: intstr.FromString("http")},
			),
		},
	}
}

// BuildPodDisruptionBudget lets at most one broker be evicted at a time.
func BuildPodDisruptionBudget(c *raftkav1.BrokerCluster) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: PDBName(c), Namespace: c.Namespace, Labels: Labels(c)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: Labels(c)},
		},
	}
}

// BuildStatefulSet is the brokers' StatefulSet. Pods start in parallel (the
// metadata group needs a quorum before any broker is ready) and are replaced
// by the operator, one at a time (OnDelete), when the safe-restart check allows.
func BuildStatefulSet(c *raftkav1.BrokerCluster, founding Founding, replicas int32, configHash string, external ExternalAddresses) *appsv1.StatefulSet {
	labels := Labels(c)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: StatefulSetName(c), Namespace: c.Namespace, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(replicas),
			ServiceName:          HeadlessServiceName(c),
			Selector:             &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template:             brokerPodTemplate(c, founding, replicas, configHash, external),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{dataVolumeClaim(c)},
			// A broker a scale-in removed held no replica and was
			// unregistered: its volume would only be refused if the
			// cluster grew again, so it goes; deleting the cluster keeps
			// the volumes.
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
}

// brokerPodTemplate is the brokers' pod: the user's pod template's
// labels, annotations and scheduling, spread over racks and nodes.
func brokerPodTemplate(c *raftkav1.BrokerCluster, founding Founding, replicas int32, configHash string, external ExternalAddresses) corev1.PodTemplateSpec {
	labels := Labels(c)
	podLabels := map[string]string{}
	podAnnotations := map[string]string{AnnotationConfigHash: configHash}
	var pt raftkav1.PodTemplate
	if c.Spec.PodTemplate != nil {
		pt = *c.Spec.PodTemplate
	}
	for k, v := range pt.Labels {
		podLabels[k] = v
	}
	for k, v := range labels {
		podLabels[k] = v
	}
	for k, v := range pt.Annotations {
		podAnnotations[k] = v
	}
	secretVolumes, secretMounts := listenerVolumes(c)
	raftVolumes, raftMounts := raftTLSVolume(c, founding)
	secretVolumes, secretMounts = append(secretVolumes, raftVolumes...), append(secretMounts, raftMounts...)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{brokerContainer(c, founding, replicas, external, secretMounts)},
			Volumes:                       secretVolumes,
			ServiceAccountName:            pt.ServiceAccountName,
			NodeSelector:                  pt.NodeSelector,
			Tolerations:                   pt.Tolerations,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			// The image runs as 65532; the volume must be writable by it.
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532)},
			// Spread over racks where the scheduler can; a cluster
			// whose nodes lack the label still schedules.
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: RackLabel(c), WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
			}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						TopologyKey:   "kubernetes.io/hostname",
						LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
					},
				}},
			}},
		},
	}
}

// brokerContainer is the broker's container: its flags, environment,
// ports, probes and volumes.
func brokerContainer(c *raftkav1.BrokerCluster, founding Founding, replicas int32, external ExternalAddresses, secretMounts []corev1.VolumeMount) corev1.Container {
	self := fmt.Sprintf("$(POD_NAME).%s.$(POD_NAMESPACE).svc", HeadlessServiceName(c))
	pullPolicy := c.Spec.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = corev1.PullIfNotPresent
	}
	voterList, joinList := metadataPeers(c, founding.Voters, replicas)
	return corev1.Container{
		Name:            "broker",
		Image:           c.Spec.Image,
		ImagePullPolicy: pullPolicy,
		Args: slices.Concat([]string{
			"--id-from-hostname",
			"--data-dir=" + dataPath,
		}, listenerArgs(c, self, external, founding), []string{
			fmt.Sprintf("--raft-address=%s:%d", self, RaftPort),
			fmt.Sprintf("--raft-listen=0.0.0.0:%d", RaftPort),
			fmt.Sprintf("--http-listen=0.0.0.0:%d", HTTPPort),
			"--metadata-voters=" + strings.Join(voterList, ","),
			"--join=" + strings.Join(joinList, ","),
		}, raftTLSArgs(founding)),
		Env:       brokerEnv(c),
		EnvFrom:   []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(c)}}}},
		Ports:     containerPorts(c),
		Resources: c.Spec.Resources,
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}},
			PeriodSeconds: 5, FailureThreshold: 3,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			InitialDelaySeconds: 10, PeriodSeconds: 10, FailureThreshold: 6,
		},
		VolumeMounts: append([]corev1.VolumeMount{{Name: "data", MountPath: dataPath}}, secretMounts...),
	}
}

// metadataPeers are the founding voters (--metadata-voters) and the
// brokers a broker asks whether the cluster exists (--join).
//
// The founding voters are fixed at the cluster's creation; the voters
// the operator adds as the cluster grows are the next brokers, so a
// broker back on an empty disk asks all of the first brokers whether
// the cluster exists: those the StatefulSet runs. A broker it does not
// run has no DNS name, and where the cluster's DNS cannot say so (no
// upstream to deny the bare .svc name), asking it would hold a new
// one-broker cluster forever.
func metadataPeers(c *raftkav1.BrokerCluster, voters, replicas int32) (voterList, joinList []string) {
	for id := int32(0); id < MaxMetadataVoters; id++ {
		if id < voters {
			voterList = append(voterList, fmt.Sprintf("%d=%s:%d", id, BrokerHost(c, id), RaftPort))
		}
		if id < max(replicas, voters) {
			joinList = append(joinList, fmt.Sprintf("%s:%d", BrokerHost(c, id), HTTPPort))
		}
	}
	return voterList, joinList
}

// brokerEnv is the pod's own name, namespace and rack, and its node's
// address where a NodePort listener advertises it.
func brokerEnv(c *raftkav1.BrokerCluster) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		// Empty where the node has no such label: no rack.
		{Name: "RAFTKA_RACK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", RackLabel(c))}}},
	}
	if hasNodePortListener(c) {
		env = append(env, corev1.EnvVar{Name: nodeIPVar, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}})
	}
	return env
}

// dataVolumeClaim is each broker's data volume.
func dataVolumeClaim(c *raftkav1.BrokerCluster) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: Labels(c)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: c.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: storageSize(c),
			}},
		},
	}
}

func storageSize(c *raftkav1.BrokerCluster) resource.Quantity {
	if c.Spec.Storage.Size.IsZero() {
		return resource.MustParse("10Gi")
	}
	return c.Spec.Storage.Size
}

// ObjectHash is a short hash of a value, such as the brokers' configuration
// for AnnotationConfigHash.
func ObjectHash(obj any) string {
	data, err := json.Marshal(obj)
	if err != nil {
		// Built objects are plain API types, which always marshal.
		panic(fmt.Sprintf("hash of %T: %v", obj, err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// containerPorts are the broker container's named ports.
func containerPorts(c *raftkav1.BrokerCluster) []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for _, p := range listenerPorts(c, false) {
		ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port})
	}
	return append(ports, corev1.ContainerPort{Name: "raft", ContainerPort: RaftPort}, corev1.ContainerPort{Name: "http", ContainerPort: HTTPPort})
}
