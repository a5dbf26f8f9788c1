package specs

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	raftkav1 "github.com/raftka/raftka/api/v1alpha1"
)

func cluster(replicas int32) *raftkav1.BrokerCluster {
	return &raftkav1.BrokerCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: "kafka"},
		Spec: raftkav1.BrokerClusterSpec{Replicas: replicas, Image: "raftka/broker:v1",
			Storage: raftkav1.StorageSpec{Size: resource.MustParse("20Gi")}, Config: map[string]string{"log-level": "debug"}},
	}
}

func arg(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func TestBuildStatefulSet(t *testing.T) {
	c := cluster(5)
	sts := BuildStatefulSet(c, Founding{Voters: 3}, 5, "abc", nil)
	if *sts.Spec.Replicas != 5 || sts.Spec.ServiceName != "events-brokers" {
		t.Fatalf("replicas %d service %s", *sts.Spec.Replicas, sts.Spec.ServiceName)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Fatal("brokers must start in parallel: none is ready before the metadata group has a quorum")
	}
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		t.Fatal("the operator, not the StatefulSet controller, must pace restarts")
	}
	args := sts.Spec.Template.Spec.Containers[0].Args
	voters := arg(args, "--metadata-voters")
	if strings.Count(voters, "=") != 3 || !strings.Contains(voters, "0=events-0.events-brokers.kafka.svc:9093") {
		t.Fatalf("voters %q", voters)
	}
	if got := arg(args, "--raft-address"); got != "$(POD_NAME).events-brokers.$(POD_NAMESPACE).svc:9093" {
		t.Fatalf("raft address %q", got)
	}
	if sts.Spec.Template.Annotations[AnnotationConfigHash] != "abc" {
		t.Fatal("config hash missing from the pod template: config changes would not roll the brokers")
	}
	probe := sts.Spec.Template.Spec.Containers[0].ReadinessProbe
	if probe == nil || probe.HTTPGet.Path != "/readyz" {
		t.Fatal("readiness must be the broker's /readyz")
	}
	pvc := sts.Spec.VolumeClaimTemplates[0]
	if q := pvc.Spec.Resources.Requests["storage"]; q.String() != "20Gi" || pvc.Labels[LabelCluster] != "events" {
		t.Fatalf("claim %v labels %v", q, pvc.Labels)
	}
	// Claims outlive the StatefulSet and have no owner: a GitOps tool's
	// tracking label on them would make them extras of its application.
	if _, tracked := pvc.Labels["app.kubernetes.io/instance"]; tracked {
		t.Fatal("volume claims carry app.kubernetes.io/instance")
	}
}

func TestVotersStayFixed(t *testing.T) {
	// A cluster created with one broker keeps one voter when it grows.
	sts := BuildStatefulSet(cluster(3), Founding{Voters: 1}, 3, "h", nil)
	if v := arg(sts.Spec.Template.Spec.Containers[0].Args, "--metadata-voters"); strings.Count(v, "=") != 1 {
		t.Fatalf("voters %q", v)
	}
	if InitialVoters(cluster(1)) != 1 || InitialVoters(cluster(7)) != 3 {
		t.Fatal("initial voters")
	}
}

func TestServicesAndConfig(t *testing.T) {
	c := cluster(3)
	if h := BuildHeadlessService(c); h.Spec.ClusterIP != "None" || !h.Spec.PublishNotReadyAddresses {
		t.Fatal("the headless Service must publish brokers before they are ready")
	}
	if BootstrapServers(c) != "events.kafka.svc:9092" {
		t.Fatal(BootstrapServers(c))
	}
	cm := BuildConfigMap(c, Founding{Voters: 3})
	if cm.Data["RAFTKA_LOG_LEVEL"] != "debug" || cm.Data["RAFTKA_DEFAULT_REPLICATION_FACTOR"] != "3" || cm.Annotations[AnnotationVoters] != "3" {
		t.Fatalf("config map %v %v", cm.Data, cm.Annotations)
	}
	if cm.Data["RAFTKA_FOLLOWER_REPLICATION_THROTTLED_RATE"] != "20971520" {
		t.Fatalf("moves copy without the default throttle: %v", cm.Data)
	}
	c.Spec.Config["follower-replication-throttled-rate"] = "0"
	if v := BuildConfigMap(c, Founding{Voters: 3}).Data["RAFTKA_FOLLOWER_REPLICATION_THROTTLED_RATE"]; v != "0" {
		t.Fatalf("spec.config's throttle gave way to the default: %q", v)
	}
	if pdb := BuildPodDisruptionBudget(c); pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Fatal("pdb")
	}
	bad := cluster(3)
	bad.Spec.Config["no-such-flag"] = "1"
	if err := ValidateConfig(bad); err == nil || !strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("validate: %v", err)
	}
}

func TestObjectHashFollowsTheBuiltObject(t *testing.T) {
	c := cluster(3)
	base := ObjectHash(BuildStatefulSet(c, Founding{Voters: 3}, 3, "h", nil))
	if again := ObjectHash(BuildStatefulSet(c, Founding{Voters: 3}, 3, "h", nil)); again != base {
		t.Fatalf("the same object hashes to %s and %s", base, again)
	}
	c.Spec.Image = "raftka/broker:next"
	if changed := ObjectHash(BuildStatefulSet(c, Founding{Voters: 3}, 3, "h", nil)); changed == base {
		t.Fatal("a new image leaves the hash unchanged")
	}
	if ObjectHash(map[string]string{"a": "1", "b": "2"}) != ObjectHash(map[string]string{"b": "2", "a": "1"}) {
		t.Fatal("map order changes the hash")
	}
}

func TestBrokersTakeTheirRackFromTheZoneLabel(t *testing.T) {
	for _, c := range []struct{ spec, want string }{{"", "topology.kubernetes.io/zone"}, {"example.com/row", "example.com/row"}} {
		bc := cluster(3)
		bc.Spec.RackLabel = c.spec
		pod := BuildStatefulSet(bc, Founding{Voters: 3}, 3, "h", nil).Spec.Template.Spec
		rack := ""
		for _, e := range pod.Containers[0].Env {
			if e.Name == "RAFTKA_RACK" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				rack = e.ValueFrom.FieldRef.FieldPath
			}
		}
		if rack != "metadata.labels['"+c.want+"']" {
			t.Errorf("rack label %q: RAFTKA_RACK from %q", c.spec, rack)
		}
		if len(pod.TopologySpreadConstraints) != 1 || pod.TopologySpreadConstraints[0].TopologyKey != c.want ||
			pod.TopologySpreadConstraints[0].WhenUnsatisfiable != corev1.ScheduleAnyway {
			t.Errorf("rack label %q: spread %+v; a cluster without the label must still schedule", c.spec, pod.TopologySpreadConstraints)
		}
	}
}

func TestBrokerImage(t *testing.T) {
	named := cluster(3)
	named.Spec.Image = "example.com/broker:1"
	if got, err := BrokerImage(named, "raftka/broker:v9"); got != "example.com/broker:1" || err != nil {
		t.Errorf("spec.image set: %q %v", got, err)
	}
	unnamed := cluster(3)
	unnamed.Spec.Image = ""
	if got, err := BrokerImage(unnamed, "raftka/broker:v9"); got != "raftka/broker:v9" || err != nil {
		t.Errorf("spec.image empty: %q %v, want the operator's default", got, err)
	}
	if _, err := BrokerImage(unnamed, ""); err == nil {
		t.Error("no image anywhere accepted")
	}
}

// TestJoinNamesOnlyBrokersThatRun: a broker on an empty disk asks the
// first brokers whether the cluster exists, but only those the
// StatefulSet runs: a one-broker cluster asks no one else and founds.
func TestJoinNamesOnlyBrokersThatRun(t *testing.T) {
	for _, tc := range []struct {
		voters, replicas int32
		want             string
	}{
		{1, 1, "events-0.events-brokers.kafka.svc:8080"},
		{1, 2, "events-0.events-brokers.kafka.svc:8080,events-1.events-brokers.kafka.svc:8080"},
		{3, 5, "events-0.events-brokers.kafka.svc:8080,events-1.events-brokers.kafka.svc:8080,events-2.events-brokers.kafka.svc:8080"},
		// Scaled in below its founders: the founders are still asked.
		{3, 1, "events-0.events-brokers.kafka.svc:8080,events-1.events-brokers.kafka.svc:8080,events-2.events-brokers.kafka.svc:8080"},
	} {
		sts := BuildStatefulSet(cluster(tc.replicas), Founding{Voters: tc.voters}, tc.replicas, "h", nil)
		if got := arg(sts.Spec.Template.Spec.Containers[0].Args, "--join"); got != tc.want {
			t.Errorf("%d voters, %d replicas: --join=%s", tc.voters, tc.replicas, got)
		}
	}
}
